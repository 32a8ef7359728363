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

// Redact returns url with its secrets masked, for any message that shows a
// Redis URL: its userinfo (user and password; in a Sentinel URL the
// sentinels'), the value of every parameter whose name, percent-decoded
// and in any case, names a credential (see secretWords; in a Sentinel URL
// password= and username= are the master's), and the fragment. It works
// on the text, not on a parsed URL, so that a URL that does not parse is
// masked too: the userinfo is everything between "://" (or the start,
// without one) and the last '@'; a parameter starts after a '?', '&' or
// ';' and its value runs to the next '&', ';' or '#'. A password that was
// not percent-encoded may spill out of its place in a URL that does not
// parse (a '#' ends the URL's text there, a '?' starts its query): the
// fragment is masked, and a '?' after a credential's name stays in its
// value.
func Redact(url string) string {
	var hide spans
	host := 0 // where the text after the userinfo starts
	if at := strings.LastIndexByte(url, '@'); at >= 0 {
		start := 0
		if i := strings.Index(url, "://"); i >= 0 && i+len("://") <= at {
			start = i + len("://")
		}
		hide.add(start, at)
		host = at + 1
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
	return hide.apply(url)
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
// parses, the fault is in the userinfo, and that is all the error says.
func parseError(url string) error {
	red := Redact(url)
	if _, err := parse(url); errors.Is(err, errUserinfoEnd) {
		return fmt.Errorf("%q: %w", red, errUserinfoEnd)
	}
	if _, err := ParseURL(red); err != nil {
		return fmt.Errorf("%q is not a Redis URL (redis://[user:password@]host:port[/db], rediss:// for TLS, cluster=true or addr= for a cluster, master_name= for Sentinel): %w", red, err)
	}
	return fmt.Errorf("%q: its user or password does not parse (percent-encode characters such as / ? # @ %% in them)", red)
}
