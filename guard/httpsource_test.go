package guard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/guard"
)

// QueryValue reads a query string as net/http does: the first value of
// r.URL.Query().Get, whatever the spelling (escapes, '+', ';', bad escapes,
// repeated and empty names).
func FuzzQueryValue(f *testing.F) {
	for _, s := range [][2]string{
		{"a=1&a=2", "a"}, {"a=%zz&a=2", "a"}, {"a=1;b=2&a=3", "a"}, {"%61=x", "a"}, {"a=b+c%2B", "a"},
		{"&&a&a=", "a"}, {"a==b", "a"}, {"a%zz=1&a=2", "a"}, {"x=1&" + strings.Repeat("&", 10001), "x"}, {"=v", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, raw, name string) {
		want := (&url.URL{RawQuery: raw}).Query().Get(name)
		if got := guard.QueryValue(raw, name); got != want {
			t.Fatalf("QueryValue(%q, %q) = %q; net/http reads %q", raw, name, got, want)
		}
	})
}

// CookieRaw reads Cookie header lines as net/http's Request.Cookie does:
// quotes, spaces, invalid names and values, several lines, repeats.
func FuzzCookieRaw(f *testing.F) {
	for _, s := range [][3]string{
		{`t="acme"`, "", "t"}, {"t=a; t=b", "", "t"}, {" t = a ", "", "t"}, {`t=a\b; t=c`, "", "t"}, {"t", "t=x", "t"},
		{"a=1", "t=%61cme", "t"}, {`t=""`, "", "t"}, {`t="`, "", "t"}, {"t=a b", "", "t"}, {"t=a,b;;", "", "t"}, {"t@=x; t=y", "", "t"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, l1, l2, name string) {
		lines := []string{l1}
		if l2 != "" {
			lines = append(lines, l2)
		}
		r := &http.Request{Header: http.Header{"Cookie": lines}}
		c, err := r.Cookie(name)
		got, ok := guard.CookieRaw(lines, name)
		switch {
		case err != nil && ok:
			t.Fatalf("CookieRaw(%q, %q) = %q; net/http finds none", lines, name, got)
		case err == nil && (!ok || got != c.Value):
			t.Fatalf("CookieRaw(%q, %q) = %q %v; net/http reads %q", lines, name, got, ok, c.Value)
		}
	})
}
