package guard

import (
	"iter"
	"net/textproto"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The sources an HTTPReader hands over as sent, read by one rule each: the
// rules net/http applies (url.Values.Get of URL.Query(), Request.Cookie),
// written here once so that a framework that is not on net/http reads
// every request as a net/http one would. The differential fuzz tests hold
// them to net/http's.

// maxQueryParams and maxCookies are net/url's and net/http's default
// limits (their GODEBUG settings urlmaxqueryparams and httpcookiemaxnum
// are not read): past them, net/http reads no value at all.
const (
	maxQueryParams = 10000
	maxCookies     = 3000
)

// QueryValue is the first value of parameter name in raw, a query string
// as sent, as net/http's r.URL.Query().Get(name) reads it: pairs split at
// '&' ('+' a space, percent-decoded once), a pair holding ';' or an escape
// that does not decode skipped, "" when none.
func QueryValue(raw, name string) string {
	for k, v := range queryPairs(raw) {
		if k == name {
			return v
		}
	}
	return ""
}

// queryPairs are the decoded pairs of raw in order, as net/http's
// url.ParseQuery keeps them: the one reading of a query string, for
// QueryValue and the canonical query of a fingerprint (canonicalQuery).
// Past maxQueryParams there are none, as net/http reads none.
func queryPairs(raw string) iter.Seq2[string, string] {
	return func(yield func(k, v string) bool) {
		if strings.Count(raw, "&")+1 > maxQueryParams {
			return
		}
		for raw != "" {
			var kv string
			kv, raw, _ = strings.Cut(raw, "&")
			if kv == "" || strings.Contains(kv, ";") {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			k, err := url.QueryUnescape(k)
			if err != nil {
				continue
			}
			if v, err = url.QueryUnescape(v); err != nil {
				continue
			}
			if !yield(k, v) {
				return
			}
		}
	}
}

// CookieRaw is the value of the first cookie name in lines, a request's
// Cookie header lines as sent, as net/http's Request.Cookie reads it: one
// pair of double quotes stripped, a cookie whose name is not a token or
// whose value holds a byte a cookie may not skipped. ok is false when there
// is none.
func CookieRaw(lines []string, name string) (value string, ok bool) {
	n := 0
	for _, line := range lines {
		n += strings.Count(line, ";") + 1
	}
	if n > maxCookies {
		return "", false
	}
	for _, line := range lines {
		line = textproto.TrimString(line)
		var part string
		for len(line) > 0 {
			part, line, _ = strings.Cut(line, ";")
			part = textproto.TrimString(part)
			if part == "" {
				continue
			}
			k, v, _ := strings.Cut(part, "=")
			k = textproto.TrimString(k)
			if !httpguts.ValidHeaderFieldName(k) || k != name {
				continue
			}
			if v, ok = cookieValue(v); ok {
				return v, true
			}
		}
	}
	return "", false
}

// cookieValue is net/http's parseCookieValue of a request's cookie.
func cookieValue(raw string) (string, bool) {
	if len(raw) > 1 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	for i := 0; i < len(raw); i++ {
		if b := raw[i]; b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\' {
			return "", false
		}
	}
	return raw, true
}
