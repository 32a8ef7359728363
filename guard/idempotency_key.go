package guard

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultIdempotencyHeader is the request header that carries the client's
// idempotency key (draft-ietf-httpapi-idempotency-key-header).
const DefaultIdempotencyHeader = "Idempotency-Key"

// MaxIdempotencyKeyLen is the longest idempotency key accepted, in bytes
// after unquoting: the draft's examples are UUIDs, Stripe allows 255.
const MaxIdempotencyKeyLen = 255

// ErrIdempotencyKey is the error (400) of an idempotency key header that
// cannot be read: empty, too long, a byte that is not printable ASCII, a
// bad escape, parameters, or several keys. Its message says what is wrong,
// never the value (a client may have sent a secret by mistake), and is the
// detail of the 400 answer.
var ErrIdempotencyKey = errors.New("invalid idempotency key")

// ErrIdempotencyKeyMissing is the error (400) of a request without an
// idempotency key on a route that requires one (IdempotencyConfig.Required).
var ErrIdempotencyKeyMissing = errors.New("missing idempotency key")

// HeaderValuesReader is what an HTTPReader adds to hand over every line of
// a header: the idempotency key header is read from all of its lines, so
// that a request sending two different keys is refused rather than run
// under whichever one a framework keeps. A reader without it hands over
// the first line only (HTTPReader.Header), where "" reads as absent.
type HeaderValuesReader[R any] interface {
	// HeaderValues are r's lines of header name, as sent, in order; none
	// when it has none; the name matched whatever its case.
	HeaderValues(r R, name string) []string
}

// ParseIdempotencyKey reads the client's key from the lines of its header,
// as sent. The value is an sf-string (RFC 8941/9651 §3.3.3: a quoted
// string whose only escapes are \" and \\), as the draft defines it, or a
// bare value, as most clients send one (a UUID, Stripe's keys), which is
// the same key: `"abc"` and `abc` are one key. Either way the key is 1–255
// bytes of printable ASCII (0x20–0x7E; a bare value has no space, '"',
// '\\', ',' or ';'). Lines, or members of one line separated by commas (how
// proxies join lines), that name the same key are that key; different keys
// are refused, as are parameters, since neither has a meaning here.
//
// ok is false, with a nil error, when there is no line at all: the request
// did not send a key. Every other failure is an error matching
// ErrIdempotencyKey: the adapter answers 400 (IdempotencyAnswer).
func ParseIdempotencyKey(lines []string) (key string, ok bool, err error) {
	if len(lines) == 0 {
		return "", false, nil
	}
	n := 0
	for _, line := range lines {
		rest := line
		for {
			k, tail, err := parseKeyMember(rest)
			n++
			if err != nil {
				if len(lines) > 1 || n > 1 || strings.Contains(line, ",") {
					return "", false, fmt.Errorf("%w: value %d: %w", ErrIdempotencyKey, n, err)
				}
				return "", false, fmt.Errorf("%w: %w", ErrIdempotencyKey, err)
			}
			switch {
			case key == "":
				key = k
			case k != key:
				return "", false, fmt.Errorf("%w: the request sends several different keys", ErrIdempotencyKey)
			}
			if tail == "" {
				break
			}
			rest = tail
		}
	}
	return key, true, nil
}

// parseKeyMember reads one member of a key line, s: optional spaces, the
// key, optional spaces, then the end of s (tail "") or a comma and the next
// member (tail what follows it, never "": a trailing comma is an error).
func parseKeyMember(s string) (key, tail string, err error) {
	s = strings.TrimLeft(s, " \t")
	var b strings.Builder
	switch {
	case s == "":
		return "", "", errors.New("empty")
	case s[0] == '"':
		i := 1
		for ; ; i++ {
			if i == len(s) {
				return "", "", errors.New("a quoted key without its closing quote")
			}
			c := s[i]
			if c == '"' {
				i++
				break
			}
			if c == '\\' {
				i++
				if i == len(s) || (s[i] != '"' && s[i] != '\\') {
					return "", "", errors.New(`a quoted key may only escape '"' and '\'`)
				}
				c = s[i]
			} else if c < 0x20 || c > 0x7e {
				return "", "", fmt.Errorf("byte %d is not printable ASCII", i)
			}
			if b.Len() == MaxIdempotencyKeyLen {
				return "", "", fmt.Errorf("longer than %d bytes", MaxIdempotencyKeyLen)
			}
			b.WriteByte(c)
		}
		s = s[i:]
		if b.Len() == 0 {
			return "", "", errors.New("empty")
		}
	default:
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c == ' ' || c == '\t' || c == ',' {
				break
			}
			if c == '"' || c == '\\' || c == ';' {
				return "", "", fmt.Errorf("byte %d (%q) may only appear in a quoted key", i, c)
			}
			if c < 0x20 || c > 0x7e {
				return "", "", fmt.Errorf("byte %d is not printable ASCII", i)
			}
		}
		if i == 0 {
			return "", "", errors.New("empty")
		}
		if i > MaxIdempotencyKeyLen {
			return "", "", fmt.Errorf("longer than %d bytes", MaxIdempotencyKeyLen)
		}
		b.WriteString(s[:i])
		s = s[i:]
	}
	s = strings.TrimLeft(s, " \t")
	switch {
	case s == "":
		return b.String(), "", nil
	case s[0] == ';':
		return "", "", errors.New("parameters are not accepted")
	case s[0] != ',':
		return "", "", errors.New("text after the key")
	case strings.TrimLeft(s[1:], " \t") == "":
		return "", "", errors.New("empty after a comma")
	}
	return b.String(), s[1:], nil
}

// QuoteIdempotencyKey is key as an sf-string, the draft's spelling: what a
// client sends, and what ParseIdempotencyKey reads back as key.
func QuoteIdempotencyKey(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 2)
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if key[i] == '"' || key[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String()
}
