package embedded

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A Redis URL carries credentials in two places, and go-redis reads both
// after percent-decoding them: the userinfo (redis.ParseURL and
// ParseClusterURL: the server's user and password; ParseFailoverURL: the
// sentinels'), and, in a Sentinel URL only, the username= and password=
// parameters (the master's). The redaction below hides both whatever their
// spelling: it decides what is a credential from decoded names, and hides
// whole values, encoded or not, rather than looking for a secret's text.

// secretWords are what the name of a parameter holding a credential
// contains, once percent-decoded and in lower case: go-redis's username=
// and password=, and what a user may write instead (sentinel_password=,
// which go-redis takes only from the userinfo; passwd=; another case),
// which go-redis refuses as an unknown option in an error that would
// quote the URL. Any other parameter with such a name loses only its
// value in a message.
var secretWords = []string{"pass", "user", "secret", "token", "auth", "cred"}

// errUserinfoEnd refuses a URL whose userinfo is not where a reader of the
// URL, and Redact, find it: before its last '@'.
var errUserinfoEnd = errors.New("an '@' after the host: the user and password end at the URL's last '@', so an '@' in a password or a parameter is written %40")

// errAddress refuses a URL whose address is not one: a password written
// without the '@' that ends it (redis://:password, redis://user:password)
// is read as a host and port, which go-redis would dial, and print in its
// errors.
var errAddress = errors.New("the address after // is not host:port (the port a number, an IPv6 address in brackets); a password goes before an '@': redis://:password@host:port")

// Redact returns url with its secrets masked, for any message that shows a
// Redis URL: its userinfo (user and password; in a Sentinel URL the
// sentinels'), the value of every parameter whose name, percent-decoded
// and in any case, names a credential (see secretWords; in a Sentinel URL
// password= and username= are the master's), and the fragment. It works
// on the text, not on a parsed URL, so that a URL that does not parse is
// masked too: the userinfo is everything between "://" and the last '@';
// a parameter starts after a '?', '&' or ';' and its value runs to the
// next '&', ';' or '#'. A password that was not percent-encoded may spill
// out of its place in a URL that does not parse (a '#' ends the URL's text
// there, a '?' starts its query): the fragment is masked, and a '?' after
// a credential's name stays in its value.
//
// Where a URL has no userinfo, a password may still be in it, written
// without the '@' that ends it or without "//": so everything after the
// "://" is masked when the address there is not one (see plainAddress),
// and a URL without a "://" before its userinfo shows its scheme only,
// when it is one of a Redis URL's.
func Redact(url string) string {
	red, _ := redact(url)
	return red
}

// redact is Redact, and says whether it masked a URL's address (see
// plainAddress).
func redact(url string) (red string, addressHidden bool) {
	if url == "" {
		return "", false
	}
	sep := strings.Index(url, "://")
	at := strings.LastIndexByte(url, '@')
	if sep < 0 || at >= 0 && at < sep+len("://") {
		return redisScheme(url) + "xxxxx", false
	}
	start := sep + len("://")
	var hide spans
	host := start // where the text after the userinfo starts
	if at >= 0 {
		hide.add(start, at)
		host = at + 1
	} else if end := start + authorityLen(url[start:]); !plainAddress(url[start:end]) {
		return url[:start] + "xxxxx", true
	}
	if i := strings.IndexByte(url[host:], '#'); i >= 0 {
		hide.add(host+i+1, len(url))
	}
	for i := 0; ; {
		j := strings.IndexAny(url[i:], "?&;")
		if j < 0 {
			break
		}
		name := i + j + 1
		end := len(url)
		if k := strings.IndexAny(url[name:], "&;#"); k >= 0 {
			end = name + k
		}
		if eq := strings.IndexByte(url[name:end], '='); eq >= 0 && secretName(url[name:name+eq]) {
			hide.add(name+eq+1, end)
		}
		i = end
	}
	return hide.apply(url), false
}

// redisScheme is url's "scheme:" when the scheme is one of a Redis URL's
// (redis, rediss, unix, in any case), else "" (and "" for "").
func redisScheme(url string) string {
	scheme, _, found := strings.Cut(url, ":")
	switch strings.ToLower(scheme) {
	case "redis", "rediss", "unix":
		if found {
			return scheme + ":"
		}
	}
	return ""
}

// authorityLen is the length of the authority that starts s, a URL's text
// after its "://": up to its path, query or fragment.
func authorityLen(s string) int {
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		return i
	}
	return len(s)
}

// plainAddress says whether an authority without userinfo is an address as
// written: empty (go-redis's default), or a host (letters, digits, '.',
// '-', '_', any non-ASCII character) or an IPv6 address in brackets, with
// an optional ":port" where port is a number. Anything else (a second ':',
// a port that is not a number, a percent-escape outside brackets) is what
// a password written without its '@' looks like.
func plainAddress(a string) bool {
	host, port := a, ""
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 || strings.ContainsFunc(a[1:end], func(r rune) bool { return !hostByte(r) && r != ':' && r != '%' }) {
			return false
		}
		host, port = "", a[end+1:]
	} else if i := strings.IndexByte(a, ':'); i >= 0 {
		host, port = a[:i], a[i:]
	}
	if port != "" && (port[0] != ':' || strings.ContainsFunc(port[1:], func(r rune) bool { return r < '0' || r > '9' })) {
		return false
	}
	return !strings.ContainsFunc(host, func(r rune) bool { return !hostByte(r) })
}

// hostByte says whether r may be in a host name as plainAddress reads one.
func hostByte(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '-' || r == '_' || r >= 0x80
}

// secretName says whether a parameter's name, as written in a URL, names a
// credential: once decoded (again while that changes it, so that no
// number of encodings hides it), in lower case, it has one of secretWords
// in it.
func secretName(name string) bool {
	for range 4 {
		d := unescape(name)
		if d == name {
			break
		}
		name = d
	}
	name = strings.ToLower(name)
	return slices.ContainsFunc(secretWords, func(w string) bool { return strings.Contains(name, w) })
}

// unescape decodes a query's percent-escapes and '+' as url.QueryUnescape
// does, but keeps an invalid escape as it is instead of failing: the name
// of a URL that does not parse is judged too.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		case c == '+':
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// spans are byte ranges [from, to) of a text to hide.
type spans [][2]int

func (s *spans) add(from, to int) {
	if from < to {
		*s = append(*s, [2]int{from, to})
	}
}

// apply returns text with each run of hidden bytes (overlapping spans
// merged) replaced by "xxxxx".
func (s spans) apply(text string) string {
	slices.SortFunc(s, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	pos := 0 // text[:pos] is written or hidden
	for i, sp := range s {
		if i > 0 && sp[0] <= pos { // overlaps or touches the run before
			pos = max(pos, sp[1])
			continue
		}
		b.WriteString(text[pos:sp[0]])
		b.WriteString("xxxxx")
		pos = sp[1]
	}
	b.WriteString(text[pos:])
	return b.String()
}

// userinfoEnd is the index of the '@' that ends url's userinfo as
// url.Parse reads it (the last '@' before the authority's end), or -1.
func userinfoEnd(url string) int {
	i := strings.Index(url, "://")
	if i < 0 {
		return -1
	}
	start := i + len("://")
	end := len(url)
	if k := strings.IndexAny(url[start:], "/?#"); k >= 0 {
		end = start + k
	}
	if at := strings.LastIndexByte(url[start:end], '@'); at >= 0 {
		return start + at
	}
	return -1
}

// parseError says why url does not parse without showing its secrets. The
// parsers' own errors quote the URL, or a piece of it (a password with a
// '/' in it is read as host and port): so the error is the one of the
// redacted URL, which has everything but the secrets; when that one
// parses, the fault is in what was masked, and that is all the error
// says.
func parseError(url string) error {
	red, addressHidden := redact(url)
	if _, err := parse(url); errors.Is(err, errUserinfoEnd) {
		return fmt.Errorf("%q: %w", red, errUserinfoEnd)
	}
	if _, err := ParseURL(red); err != nil {
		return fmt.Errorf("%q is not a Redis URL (redis://[user:password@]host:port[/db], rediss:// for TLS, cluster=true or addr= for a cluster, master_name= for Sentinel): %w", red, err)
	}
	if addressHidden {
		return fmt.Errorf("%q: %w", red, errAddress)
	}
	return fmt.Errorf("%q: its user or password does not parse (percent-encode characters such as / ? # @ %% in them)", red)
}
