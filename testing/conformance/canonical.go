package conformance

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// literal reports whether c may stand unescaped in a path segment (RFC
// 3986 pchar less '%'): every other byte must be percent-encoded.
func literal(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

// Encode spells id as a path segment, one valid percent-encoding of it
// chosen by choice: byte i of id is escaped when it must be, or when bit 0
// of choice[i] is set, with lower-case hex digits when bit 1 is set. Every
// spelling decodes to id.
func Encode(id string, choice []byte) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		var ch byte
		if i < len(choice) {
			ch = choice[i]
		}
		c := id[i]
		switch {
		case literal(c) && ch&1 == 0:
			b.WriteByte(c)
		case ch&2 != 0:
			fmt.Fprintf(&b, "%%%02x", c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// decoded is id percent-decoded until no escape is left, or "" when that
// takes more than guard.MaxParamDecodes-1 decodings (a spelling of it,
// one decoding more, may be refused): the id a key names, whichever
// spelling of it the router handed over.
func decoded(id string) string {
	for i := 0; strings.Contains(id, "%"); i++ {
		d, err := url.PathUnescape(id)
		if err != nil {
			break
		}
		if i == guard.MaxParamDecodes-1 {
			return ""
		}
		id = d
	}
	return id
}

// controlChar reports whether id has a byte every key value refuses.
func controlChar(id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] == 0x7f {
			return true
		}
	}
	return false
}

// canonicalSeeds are ids whose spellings differ between frameworks, or
// whose decoding twice would change them.
var canonicalSeeds = []struct {
	id     string
	choice []byte
}{
	{"42", nil},
	{"42", []byte{1, 1}},
	{"a:b", []byte{0, 1, 0}},
	{"é", nil},
	{"é", []byte{2, 2}},
	{"%25", nil},
	{"%", nil},
	{"%2F", []byte{3, 3, 3}},
	{"a/b", nil},
	{`a\b`, nil},
	{"{t}x", []byte{1}},
	{"a b", nil},
	{"a\x00b", nil},
	{"a\nb", nil},
	{"\xff\xfe", nil},
	{"..", []byte{1, 1}},
	{"ABC", nil},
	{"a+b", []byte{0, 1}},
}

// FuzzCanonicalKey is the property every HTTP adapter keeps: for any id and
// any valid percent-encoding of it in the path, the lease's key is
// core.JoinKey("order", id decoded to its end), whether the framework
// decoded it or not; an id with a control character is refused with 400;
// an id with a '/' is either not routed (gin: 404) or keyed the same way.
// No spelling gets another key.
func FuzzCanonicalKey(f *testing.F, a Adapter) {
	for _, s := range canonicalSeeds {
		f.Add(s.id, s.choice)
	}
	client := testkit.Client(f, redistest.Start(f).NewClient())
	send := exchange(f, a, client, Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, TTL: ttl, NoWait: true,
		Handler: func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
			if !ok {
				http.Error(w, "no lease", http.StatusInternalServerError)
				return
			}
			ok2(w, l.Key())
		}})
	f.Fuzz(func(t *testing.T, id string, choice []byte) {
		if id == "" || len(id) > 1<<10 {
			return
		}
		spelled := Encode(id, choice)
		target := "/orders/" + spelled + "/pay"
		if a.Traits.PathPlusIsSpace { // the framework decodes the spelling as a query value: an unescaped '+' is a space
			if q, err := url.QueryUnescape(spelled); err == nil {
				id = q
			}
		}
		code, body := send(http.MethodPost, target)
		d := decoded(id)
		want, _ := core.JoinKey("order", d)
		switch {
		case strings.Contains(id, "/") && code == http.StatusNotFound:
			// not routed to the one-segment parameter at all
		case d == "" && code == http.StatusBadRequest:
			// nested too deep: refused, by some framework one decoding earlier
		case d == "":
			if code != http.StatusOK || !strings.HasPrefix(body, "order:") {
				t.Fatalf("%s: id %q nested %d deep answered %d %q, want 200 or 400", target, id, guard.MaxParamDecodes, code, body)
			}
		case controlChar(d):
			if code != http.StatusBadRequest {
				t.Fatalf("%s: id %q with a control character answered %d %q, want 400", target, id, code, body)
			}
		case code != http.StatusOK || body != want:
			t.Fatalf("%s: id %q answered %d %q, want 200 with key %q", target, id, code, body, want)
		}
	})
}

// holdAndProbe sends holder, whose handler sends the key it locked on
// entered and then waits on release, and, while it holds, probe. It fails
// t unless the holder (named what) locked want and was answered 200 once
// released, and returns the probe's answer.
func holdAndProbe(t *testing.T, entered <-chan string, release chan struct{}, want, what string, holder, probe func() response) response {
	t.Helper()
	done := make(chan response, 1)
	go func() { done <- holder() }()
	if got := testkit.Recv(t, entered, 10*time.Second, "the holder's handler"); got != want {
		close(release)
		t.Fatalf("%s locked %q, want %q", what, got, want)
	}
	r := probe()
	release <- struct{}{}
	if h := testkit.Recv(t, done, 10*time.Second, "the holder's answer"); h.status != http.StatusOK {
		t.Fatalf("holder answered %d %q", h.status, h.body)
	}
	return r
}

// SpellingsExclude: one order requested through replica a with one spelling
// of its id and through replica b with another (escaped, unescaped, other
// hex case, nested: "%2525", "%25" and "%" are one id): the second is
// refused while the first holds the lock, whatever frameworks serve them.
func SpellingsExclude(t *testing.T, a, b Adapter) {
	entered, release := make(chan string, 1), make(chan struct{})
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: "/orders/:id/pay", Key: orderKey, Handler: func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
			entered <- l.Key()
			<-release
			writeOK(w)
		}},
		Route{Method: http.MethodPost, Path: "/orders/:id/refund", Key: orderKey, NoWait: true, Handler: func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
			ok2(w, l.Key())
		}})
	ctx := e.ctx(30 * time.Second)
	for _, tc := range []struct {
		holder, other, id string
		sameID            bool // other spells the same id
	}{
		{"a%3Ab", "a:b", "a:b", true},
		{"%34%32", "42", "42", true},
		{"%c3%a9", "%C3%A9", "é", true},
		{"%2525", "%2525", "%", true},
		{"%2525", "%25", "%", true}, // decoded to its end, whatever the framework decoded
		{"%252541", "A", "A", true},
		{"%2525", "%2541", "%", false},
	} {
		want, _ := core.JoinKey("order", tc.id)
		r := holdAndProbe(t, entered, release, want, "/orders/"+tc.holder+"/pay",
			func() response { return e.do(ctx, 0, http.MethodPost, "/orders/"+tc.holder+"/pay") },
			func() response { return e.do(ctx, 1, http.MethodPost, "/orders/"+tc.other+"/refund") })
		switch sameID := tc.sameID; {
		case sameID && r.status != http.StatusConflict:
			t.Errorf("%s on %s while %s on %s holds: %d %q, want 409", tc.other, b.Name, tc.holder, a.Name, r.status, r.body)
		case !sameID && r.status != http.StatusOK:
			t.Errorf("%s (another id) on %s while %s holds: %d %q, want 200", tc.other, b.Name, tc.holder, r.status, r.body)
		}
	}
	close(release)
}

// CookieOneKey: one cookie, one key, whatever framework reads it. A
// request holds "tenant:<t>" through replica a with one spelling of the
// cookie t, and another asks (no wait) through replica b with another: the
// second is refused while the first holds when both decode to one value
// (percent-decoded once, '+' a space, one pair of double quotes stripped
// by net/http), and admitted when they do not. A value that does not
// decode is 400 on both.
func CookieOneKey(t *testing.T, a, b Adapter) {
	const spec = "const:tenant,cookie:t"
	entered, release := make(chan string, 1), make(chan struct{})
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: "/export", Key: spec, Handler: func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
			if !ok {
				http.Error(w, "no lease", http.StatusInternalServerError)
				return
			}
			entered <- l.Key()
			<-release
			writeOK(w)
		}},
		Route{Method: http.MethodPost, Path: "/settings", Key: spec, NoWait: true, Handler: func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
			ok2(w, l.Key())
		}})
	ctx := e.ctx(30 * time.Second)
	for _, tc := range []struct {
		holder, other, value string
		same                 bool // other decodes to value too
	}{
		{"%61cme", "acme", "acme", true},
		{"acme", "%61%63%6D%65", "acme", true},
		{"ac+me", "ac%20me", "ac me", true},
		{`"acme"`, "acme", "acme", true},
		{`"%61cme"`, "%61cme", "acme", true},
		{"%2561", "%61", "%61", false}, // "%61" is "a": decoded once, never twice
		{"a%2Bb", "a+b", "a+b", false}, // an encoded plus is a plus, a bare one a space
	} {
		want, _ := core.JoinKey("tenant", tc.value)
		r := holdAndProbe(t, entered, release, want, "cookie t="+tc.holder+" on "+a.Name,
			func() response { return e.do(ctx, 0, http.MethodPost, "/export", "Cookie", "t="+tc.holder) },
			func() response { return e.do(ctx, 1, http.MethodPost, "/settings", "Cookie", "t="+tc.other) })
		switch {
		case tc.same && r.status != http.StatusConflict:
			t.Errorf("cookie t=%s on %s while t=%s on %s holds %q: %d %q, want 409", tc.other, b.Name, tc.holder, a.Name, want, r.status, r.body)
		case !tc.same && r.status != http.StatusOK:
			t.Errorf("cookie t=%s (another value) on %s while t=%s holds: %d %q, want 200", tc.other, b.Name, tc.holder, r.status, r.body)
		}
	}
	close(release)
	for i := range e.reps {
		r := e.do(ctx, i, http.MethodPost, "/settings", "Cookie", "t=%zz")
		if r.status != http.StatusBadRequest || strings.Contains(r.body, "%zz") {
			t.Errorf("cookie t=%%zz on %s: %d %q, want 400 that does not repeat the value", e.reps[i].adapter.Name, r.status, r.body)
		}
	}
}

// PathRewrites: the key is what the handler reads under a router that
// rewrites the path it routes on (a path middleware: chi's CleanPath,
// URLFormat, StripSlashes), for an adapter whose router sets the request's
// path values (r.PathValue: ServeMux, chi), served by a. Each spelling
// routes to "/orders/:id" with the id its handler reads; the lease's key is
// that id's ("order:" and the id decoded to its end), and while it holds,
// the plain path of the same id on replica b, served by b, is refused.
func PathRewrites(t *testing.T, a, b Adapter, spellings ...string) {
	type read struct{ key, id string }
	entered, release := make(chan read, 1), make(chan struct{})
	e := newEnv(t, a, b, ttl,
		Route{Method: http.MethodPost, Path: "/orders/:id", Key: orderKey, Handler: func(w http.ResponseWriter, r *http.Request, l *core.Lease, ok bool) {
			if !ok {
				http.Error(w, "no lease", http.StatusInternalServerError)
				return
			}
			entered <- read{l.Key(), r.PathValue("id")}
			<-release
			writeOK(w)
		}},
		Route{Method: http.MethodPost, Path: "/orders/:id/refund", Key: orderKey, NoWait: true, Handler: func(w http.ResponseWriter, _ *http.Request, l *core.Lease, ok bool) {
			ok2(w, l.Key())
		}})
	ctx := e.ctx(30 * time.Second)
	for _, s := range spellings {
		done := make(chan response, 1)
		go func() { done <- e.do(ctx, 0, http.MethodPost, s) }()
		var got read
		select {
		case got = <-entered:
		case r := <-done:
			t.Fatalf("%s on %s: %d %q before its handler ran, want it routed to /orders/:id", s, a.Name, r.status, r.body)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s on %s: timed out waiting for its handler", s, a.Name)
		}
		id := decoded(got.id)
		if want, _ := core.JoinKey("order", id); got.key != want || id == "" {
			t.Errorf("%s on %s: the handler reads the id %q and the lock is %q, want %q", s, a.Name, got.id, got.key, want)
		}
		probe := e.do(ctx, 1, http.MethodPost, "/orders/"+url.PathEscape(id)+"/refund")
		release <- struct{}{}
		if h := testkit.Recv(t, done, 10*time.Second, "the holder's answer"); h.status != http.StatusOK {
			t.Errorf("%s: holder answered %d %q", s, h.status, h.body)
		}
		if probe.status != http.StatusConflict {
			t.Errorf("/orders/%s/refund on %s while %s on %s holds: %d %q, want 409", id, b.Name, s, a.Name, probe.status, probe.body)
		}
	}
	close(release)
}
