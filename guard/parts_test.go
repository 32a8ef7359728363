package guard_test

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// req is a request as a map "source:name" → value; a param absent from the
// map is a param the route does not have; "route" is the matched route.
type req map[string]string

type mapReader struct{}

func (m mapReader) Header(r req, name string) string { return m.request(r).Header.Get(name) }
func (m mapReader) Cookies(r req) []string           { return m.request(r).Header["Cookie"] }
func (m mapReader) RawQuery(r req) string            { return m.request(r).URL.RawQuery }

// request is a request carrying r's method (default GET), headers, query
// and cookies.
func (mapReader) request(r req) *http.Request {
	q := url.Values{}
	hr := httptest.NewRequest(cmp.Or(r["method"], http.MethodGet), "/", nil)
	for k, v := range r {
		src, name, _ := strings.Cut(k, ":")
		switch src {
		case "header":
			hr.Header[name] = []string{v}
		case "query":
			q.Set(name, v)
		case "cookie":
			hr.Header.Add("Cookie", name+"="+v)
		}
	}
	hr.URL.RawQuery = q.Encode()
	return hr
}

func (mapReader) Param(r req, n string) (string, bool) {
	v, ok := r["param:"+n]
	return v, ok
}

func (mapReader) Route(r req) (string, []string) {
	var names []string
	if r["params"] != "" {
		names = strings.Split(r["params"], ",")
	}
	return r["route"], names
}

func build(t testing.TB, spec string, r req) (string, error) {
	t.Helper()
	k, err := guard.ParseKey[req](mapReader{}, spec)
	if err != nil {
		t.Fatal(err)
	}
	return k.Build(r)
}

func TestKeysFromSpecs(t *testing.T) {
	r := req{"param:id": "42", "header:X-Tenant": "acme", "query:q": "a:b", "cookie:s": "c:d"}
	for _, tc := range []struct{ spec, want string }{
		{"const:order,param:id", "order:42"}, // the same string gRPC's LockKey and core.JoinKey give
		{"const:tenant,header:X-Tenant,param:id", "tenant:acme:42"},
		{"query:q", `a\:b`},
		{"cookie:s,const:x", `c\:d:x`},
		{" const:order , Param:id ", "order:42"},
		{"const:a:b", `a\:b`},
	} {
		got, err := build(t, tc.spec, r)
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.spec, got, err, tc.want)
		}
	}
}

func TestParseKeyRefuses(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"", "empty"},
		{"  ", "empty"},
		{"order", "not source:name"},
		{"const:order,", "not source:name"},
		{"form:id", "unknown source"},
		{"param:", "empty name"},
		{"const:order,header: ", "empty name"},
	} {
		if _, err := guard.ParseKey[req](mapReader{}, tc.in); !errors.Is(err, guard.ErrSpec) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseKey(%q) error = %v, want ErrSpec mentioning %q", tc.in, err, tc.err)
		}
	}
}

// The part's error says whose mistake it is, naming the part as the user
// wrote it: the caller's is ErrInvalidKey, the server's ErrKeyConfig,
// never both.
func TestPartErrors(t *testing.T) {
	r := req{"param:id": "", "header:X-Tenant": "acme", "param:deep": "%25252525252525252541", "header:X-Nl": "a\nb", "query:q": "a\x00b", "cookie:c": "a%0Ab"}
	for _, tc := range []struct {
		spec string
		kind core.Outcome
		msg  string
	}{
		{"const:order,param:id", core.OutcomeBadKey, `param "id" is missing or empty`},
		{"const:order,header:X-Other", core.OutcomeBadKey, `header "X-Other"`},
		{"const:order,param:nope", core.OutcomeMisconfigured, "no such path parameter"},
		{"param:deep", core.OutcomeBadKey, "still percent-encoded after 8 decodings"},
		{"const:order,header:X-Nl", core.OutcomeBadKey, `header "X-Nl" is invalid: a control character`},
		{"const:order,query:q", core.OutcomeBadKey, `query "q" is invalid: a control character`},
		{"const:order,cookie:c", core.OutcomeBadKey, `cookie "c" is invalid: a control character (U+0000-U+001F, U+007F) cannot be part of a lock key: at byte 1`},
	} {
		_, err := build(t, tc.spec, r)
		bad, conf := errors.Is(err, core.ErrInvalidKey), errors.Is(err, core.ErrKeyConfig)
		if bad == conf || core.Classify(context.Background(), err) != tc.kind || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err %v (invalid key %v, key config %v) kind %v, want %v mentioning %q", tc.spec, err, bad, conf, core.Classify(nil, err), tc.kind, tc.msg)
		}
	}
}

// A part the server configured wrongly is ErrKeyConfig (500), not the
// caller's ErrInvalidKey (400); a missing value is the caller's.
func TestJoinTellsServerFromCallerMistakes(t *testing.T) {
	get := func(name string) guard.Part[req] {
		return guard.NewPart("field", name, func(r req) (string, error) {
			v, ok := r[name]
			if !ok {
				return "", errors.Join(core.ErrKeyConfig, errors.New("no such field"))
			}
			return v, nil
		})
	}
	r := req{"id": "42", "empty": "", "colon": "a:b"}
	if k, err := guard.Join(guard.Const[req]("order"), get("id")).Build(r); err != nil || k != "order:42" {
		t.Fatalf("Build = %q, %v", k, err)
	}
	if k, err := guard.Join(guard.Const[req]("order"), get("colon")).Build(r); err != nil || k != `order:a\:b` {
		t.Fatalf("Build with a ':' in a value = %q, %v; want it escaped as by core.JoinKey", k, err)
	}
	_, err := guard.Join(guard.Const[req]("order"), get("empty")).Build(r)
	var kpe *core.KeyPartError
	if !errors.Is(err, core.ErrInvalidKey) || errors.Is(err, core.ErrKeyConfig) || !errors.As(err, &kpe) || kpe.Index != 1 || kpe.Name != "empty" {
		t.Fatalf("empty part = %v, want a *core.KeyPartError naming it, ErrInvalidKey only", err)
	}
	_, err = guard.Join(guard.Const[req]("order"), get("nope")).Build(r)
	if errors.Is(err, core.ErrInvalidKey) || !errors.Is(err, core.ErrKeyConfig) || !strings.Contains(err.Error(), "misconfigured") {
		t.Fatalf("misconfigured part = %v, want ErrKeyConfig only", err)
	}
	if _, err := guard.Join(guard.Const[req]("order"), guard.Part[req]{}).Build(r); errors.Is(err, core.ErrInvalidKey) || !errors.Is(err, core.ErrKeyConfig) {
		t.Fatalf("zero part = %v, want ErrKeyConfig only", err)
	}
	if _, err := (guard.Key[req]{}).Build(r); !errors.Is(err, core.ErrKeyConfig) {
		t.Fatalf("zero key = %v, want ErrKeyConfig", err)
	}
}

func TestVerbatim(t *testing.T) {
	whole := func(k string, err error) guard.Key[req] {
		return guard.Verbatim("KeyFunc", func(req) (string, error) { return k, err })
	}
	if k, err := whole("order:42", nil).Build(nil); k != "order:42" || err != nil {
		t.Errorf("Verbatim = %q, %v; want verbatim", k, err)
	}
	for _, err := range []error{nil, errors.New("no body")} {
		if _, got := whole("", err).Build(nil); !errors.Is(got, core.ErrInvalidKey) || core.Classify(nil, got) != core.OutcomeBadKey {
			t.Errorf("Verbatim(\"\", %v) = %v, want a bad key", err, got)
		}
	}
	if _, got := whole("", core.ErrKeyConfig).Build(nil); core.Classify(nil, got) != core.OutcomeMisconfigured {
		t.Errorf("Verbatim with ErrKeyConfig = %v, want it kept", got)
	}
}

func TestRouteKey(t *testing.T) {
	k := guard.RouteKey[req](mapReader{})
	got, err := k.Build(req{"route": "/orders/:id/lines/:line", "params": "id,line", "param:id": "4:2", "param:line": "7"})
	if want := `/orders/\:id/lines/\:line:4\:2:7`; err != nil || got != want {
		t.Errorf("RouteKey = %q, %v; want %q", got, err, want)
	}
	if _, err := k.Build(req{}); core.Classify(nil, err) != core.OutcomeMisconfigured {
		t.Errorf("RouteKey without a route = %v, want misconfigured", err)
	}
}

func TestConstRefusesEmpty(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "empty key part") {
			t.Fatalf("Const(\"\") panicked with %v", r)
		}
	}()
	guard.Const[int]("")
}

// The key builder never lets two different requests share a key: the key
// is core.JoinKey of the values (whose own fuzz test shows it splits back
// into them). Seeds are hostile values: separators, escapes, braces, Unicode, 10 KB.
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
			if c.h == "" || c.q == "" || guard.CheckValue(c.h) != nil || guard.CheckValue(c.q) != nil {
				if !errors.Is(c.err, core.ErrInvalidKey) {
					t.Fatalf("(%q, %q), empty or with a control character, gave key %q, %v", c.h, c.q, c.k, c.err)
				}
				continue
			}
			if c.err != nil {
				t.Fatalf("(%q, %q): %v", c.h, c.q, c.err)
			}
			if want, _ := core.JoinKey("t", c.h, c.q); c.k != want {
				t.Fatalf("key %q, core.JoinKey gives %q", c.k, want)
			}
		}
		if err1 == nil && err2 == nil && (k1 == k2) != (h1 == h2 && q1 == q2) {
			t.Fatalf("(%q,%q) and (%q,%q) collide on %q", h1, q1, h2, q2, k1)
		}
	})
}

func TestParamValue(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{"42", "42", false},
		{"%34%32", "42", false},
		{"%c3%a9", "é", false},
		{"%C3%A9", "é", false},
		{"%2525", "%", false}, // decoded to its end: "%2525", "%25" and "%" are one id
		{"%25", "%", false},
		{"%", "%", false}, // a '%' that starts no escape is part of the id
		{"100%", "100%", false},
		{"%2541%", "%2541%", false}, // a '%' that starts no escape: nothing decoded
		{"a%2Fb", "a/b", false},
		{"a%3Ab", "a:b", false},
		{"%zz", "%zz", false},
		{"ABC", "ABC", false},             // case is not normalised
		{"%2525252525252541", "A", false}, // 8 decodings
		{"%252525252525252541", "", true}, // a 9th is refused
	} {
		got, err := guard.ParamValue(tc.in)
		if tc.bad {
			if !errors.Is(err, guard.ErrParamValue) {
				t.Errorf("ParamValue(%q) = %q, %v; want ErrParamValue", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParamValue(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// A control character is refused from every source, whole keys included,
// by one rule (CheckValue), and the error never repeats the value.
func TestControlCharacters(t *testing.T) {
	for _, v := range []string{"a\x00b", "\n", "a\tb", "a\x7fb", "\x1f"} {
		if err := guard.CheckValue(v); !errors.Is(err, guard.ErrControlChar) {
			t.Errorf("CheckValue(%q) = %v, want ErrControlChar", v, err)
		}
	}
	for _, v := range []string{"a b", "é", "\xff", "a:b"} {
		if err := guard.CheckValue(v); err != nil {
			t.Errorf("CheckValue(%q) = %v, want nil", v, err)
		}
	}
	keys := map[string]guard.Key[req]{
		"Verbatim": guard.Verbatim("f", func(r req) (string, error) { return r["v"], nil }),
		"KeyFunc":  guard.KeyFunc(func(r req) (string, error) { return r["v"], nil }),
		"Func":     guard.Join(guard.Func("f", func(r req) (string, error) { return r["v"], nil })),
	}
	for name, k := range keys {
		_, err := k.Build(req{"v": "order:4\n2-secret"})
		if !errors.Is(err, core.ErrInvalidKey) || !errors.Is(err, guard.ErrControlChar) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s with a control character: %v, want ErrInvalidKey and ErrControlChar, without the value", name, err)
		}
	}
}

func TestCookieValue(t *testing.T) {
	for in, want := range map[string]string{"%61cme": "acme", "ac+me": "ac me", "a%2Bb": "a+b", "%2561": "%61", "acme": "acme"} {
		if got, err := guard.CookieValue(in); err != nil || got != want {
			t.Errorf("CookieValue(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := guard.CookieValue("%zz-secret"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("CookieValue of a bad escape = %v, want an error that does not repeat the value", err)
	}
}
