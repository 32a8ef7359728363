package keyspec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/keypart"
	"github.com/lockkit/lockkit/internal/keyspec"
)

// req is a request as a map "source:name" → value; a param absent from the
// map is a param the route does not have.
type req map[string]string

var rd = keyspec.Reader[req]{
	Param: func(r req, n string) (string, bool, bool) {
		v, ok := r["param:"+n]
		return v, false, ok
	},
	Header: func(r req, n string) string { return r["header:"+n] },
	Query:  func(r req, n string) string { return r["query:"+n] },
	Cookie: func(r req, n string) string { return r["cookie:"+n] },
}

func build(t *testing.T, spec string, r req) (string, error) {
	t.Helper()
	return keypart.Build(r, rd.Parts(keyspec.MustParse("test", spec)))
}

func TestReaderBuildsCoreKeys(t *testing.T) {
	r := req{"param:id": "42", "header:X-Tenant": "acme", "query:q": "a:b", "cookie:s": `c\d`}
	for _, tc := range []struct{ spec, want string }{
		{"const:order,param:id", "order:42"}, // the same string gRPC's LockKey and core.JoinKey give
		{"const:tenant,header:X-Tenant,param:id", "tenant:acme:42"},
		{"query:q", `a\:b`},
		{"cookie:s,const:x", `c\\d:x`},
	} {
		got, err := build(t, tc.spec, r)
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.spec, got, err, tc.want)
		}
	}
}

func TestReaderErrors(t *testing.T) {
	r := req{"param:id": "", "header:X-Tenant": "acme"}
	for _, tc := range []struct {
		spec string
		kind core.Outcome
		msg  string
	}{
		{"const:order,param:id", core.OutcomeBadKey, `param "id" is missing or empty`},
		{"const:order,header:X-Other", core.OutcomeBadKey, `header "X-Other"`},
		{"const:order,param:nope", core.OutcomeMisconfigured, "no such path parameter"},
	} {
		_, err := build(t, tc.spec, r)
		// The caller's mistake is ErrInvalidKey; the server's is ErrKeyConfig, never both.
		bad, conf := errors.Is(err, core.ErrInvalidKey), errors.Is(err, core.ErrKeyConfig)
		if bad == conf || core.Classify(context.Background(), err) != tc.kind || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err %v (invalid key %v, key config %v) kind %v, want %v mentioning %q", tc.spec, err, bad, conf, core.Classify(nil, err), tc.kind, tc.msg)
		}
	}
}

func TestWholeKey(t *testing.T) {
	if k, err := keyspec.WholeKey("order:42", nil); k != "order:42" || err != nil {
		t.Errorf("WholeKey = %q, %v; want verbatim", k, err)
	}
	for _, err := range []error{nil, errors.New("no body")} {
		if _, got := keyspec.WholeKey("", err); !errors.Is(got, core.ErrInvalidKey) || core.Classify(nil, got) != core.OutcomeBadKey {
			t.Errorf("WholeKey(\"\", %v) = %v, want a bad key", err, got)
		}
	}
}

// unescape splits a key built by core.JoinKey back into its parts; it
// exists only to show the key determines its parts (no collisions).
func unescape(key string) []string {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == '\\' && i+1 < len(key):
			i++
			b.WriteByte(key[i])
		case c == ':':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(parts, b.String())
}

// The key builder never lets two different requests share a key: the key
// splits back into exactly the values it was built from, and equals
// core.JoinKey of them. Seeds are hostile values: separators, escapes, braces, Unicode, 10 KB.
func FuzzKeyBuilder(f *testing.F) {
	big := strings.Repeat("x", 10<<10)
	for _, s := range [][4]string{
		{"a:b", "c", "a", "b:c"},
		{`a\`, ":b", `a\:`, "b"},
		{`\`, `\`, `\\`, ""},
		{"a/b", "c", "a", "/b/c"},
		{"{t}", "x", "{t}:x", "y"},
		{"ü日本", "é", "ü日本:é", "x"},
		{big, "1", big + ":1", "2"},
		{"\xff\xfe", ":", "\x00", "::"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, h1, q1, h2, q2 string) {
		const spec = "const:t,header:X-A,query:q"
		k1, err1 := build(t, spec, req{"header:X-A": h1, "query:q": q1})
		k2, err2 := build(t, spec, req{"header:X-A": h2, "query:q": q2})
		for _, c := range []struct {
			h, q, k string
			err     error
		}{{h1, q1, k1, err1}, {h2, q2, k2, err2}} {
			if c.h == "" || c.q == "" {
				if !errors.Is(c.err, core.ErrInvalidKey) {
					t.Fatalf("empty part gave key %q, %v", c.k, c.err)
				}
				continue
			}
			if c.err != nil {
				t.Fatalf("(%q, %q): %v", c.h, c.q, c.err)
			}
			if want, _ := core.JoinKey("t", c.h, c.q); c.k != want {
				t.Fatalf("key %q, core.JoinKey gives %q", c.k, want)
			}
			if got := unescape(c.k); len(got) != 3 || got[0] != "t" || got[1] != c.h || got[2] != c.q {
				t.Fatalf("key %q splits into %q, built from %q %q", c.k, got, c.h, c.q)
			}
		}
		if err1 == nil && err2 == nil && (k1 == k2) != (h1 == h2 && q1 == q2) {
			t.Fatalf("(%q,%q) and (%q,%q) collide on %q", h1, q1, h2, q2, k1)
		}
	})
}
