package conformance

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
)

// env is one Redis and two replicas on it, each with its own Client (on its
// own go-redis client) and its own loopback HTTP server.
type env struct {
	t    *testing.T
	srv  *redistest.Server
	http *http.Client
	reps [2]*replica
}

type replica struct {
	adapter Adapter
	client  *core.Client
	obs     *recorder
	url     string
	written *writeLog // nil for a Listen adapter: the suite sees no server side
	server  Server
}

// newEnv starts Redis and replicas a and b serving routes (the same routes,
// as two replicas behind a load balancer).
func newEnv(t *testing.T, a, b Adapter, ttl time.Duration, routes ...Route) *env {
	t.Helper()
	e := &env{t: t, srv: redistest.Start(t)}
	tr := &http.Transport{MaxIdleConnsPerHost: 128, DisableCompression: true}
	e.http = &http.Client{Transport: tr, Timeout: 60 * time.Second}
	for i, ad := range []Adapter{a, b} {
		obs := newRecorder()
		c, err := core.New(e.srv.NewClient(), core.WithTTL(ttl), core.WithObserver(obs), core.WithOwner(ad.Name+"-"+string(rune('A'+i))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		rep := &replica{adapter: ad, client: c, obs: obs}
		if ad.Listen != nil {
			rep.server = ad.Listen(t, c, routes...)
		} else {
			rep.written = &writeLog{byID: map[string]*writeRec{}}
			hs := httptest.NewServer(rep.written.wrap(withDeadlines(ad.Build(t, c, routes...), routes)))
			t.Cleanup(hs.Close)
			rep.server = Server{URL: hs.URL, Shutdown: hs.Config.Shutdown}
		}
		rep.url = rep.server.URL
		e.reps[i] = rep
	}
	// Cleanups run last first: the client's idle connections close before
	// the servers stop (a server such as fasthttp waits for them).
	t.Cleanup(tr.CloseIdleConnections)
	return e
}

// exchange serves routes with a on client and returns how to send it one
// request (method, target, header name/value pairs) and read the status and
// body: in process for a Build adapter, over loopback for a Listen one.
func exchange(t testing.TB, a Adapter, client *core.Client, routes ...Route) func(method, target string, hdr ...string) (int, string) {
	if a.Listen == nil {
		h := withDeadlines(a.Build(t, client, routes...), routes)
		return func(method, target string, hdr ...string) (int, string) {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			req.Method = method
			for j := 0; j+1 < len(hdr); j += 2 {
				req.Header[http.CanonicalHeaderKey(hdr[j])] = []string{hdr[j+1]}
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			return w.Code, w.Body.String()
		}
	}
	srv := a.Listen(t, client, routes...)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return func(method, target string, hdr ...string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+target, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		for j := 0; j+1 < len(hdr); j += 2 {
			req.Header[http.CanonicalHeaderKey(hdr[j])] = []string{hdr[j+1]}
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
}

// response is what a client got.
type response struct {
	status int
	header http.Header
	body   string
	err    error
}

// do sends one request to replica i. hdr: header name/value pairs; "X-Test-Id"
// names the request in the replica's write log.
func (e *env) do(ctx context.Context, i int, method, path string, hdr ...string) response {
	req, err := http.NewRequestWithContext(ctx, method, e.reps[i].url+path, nil)
	if err != nil {
		return response{err: err}
	}
	for j := 0; j+1 < len(hdr); j += 2 {
		req.Header[http.CanonicalHeaderKey(hdr[j])] = []string{hdr[j+1]}
	}
	res, err := e.http.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: string(b), err: err}
}

func (e *env) ctx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	e.t.Cleanup(cancel)
	return ctx
}

// held reports whether key is locked, asking Redis.
func (e *env) held(key string) (core.Holder, bool) {
	e.t.Helper()
	h, ok, err := e.reps[0].client.Inspect(e.ctx(5*time.Second), key)
	if err != nil {
		e.t.Fatalf("Inspect(%q): %v", key, err)
	}
	return h, ok
}

// writeLog records, per X-Test-Id, what the server side wrote: the status
// passed to WriteHeader (0: none) and the body bytes.
type writeLog struct {
	mu   sync.Mutex
	byID map[string]*writeRec
}

type writeRec struct {
	status int
	bytes  int
	done   chan struct{} // closed when the server's handler returned
}

func (l *writeLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Test-Id")
		if id == "" {
			h.ServeHTTP(w, r)
			return
		}
		rec := &writeRec{done: make(chan struct{})}
		l.mu.Lock()
		l.byID[id] = rec
		l.mu.Unlock()
		defer close(rec.done)
		h.ServeHTTP(&recWriter{ResponseWriter: w, rec: rec, mu: &l.mu}, r)
	})
}

func (l *writeLog) get(id string) *writeRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byID[id]
}

type recWriter struct {
	http.ResponseWriter
	rec *writeRec
	mu  *sync.Mutex
}

func (w *recWriter) WriteHeader(code int) {
	w.mu.Lock()
	if w.rec.status == 0 {
		w.rec.status = code
	}
	w.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *recWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.rec.bytes += len(b)
	w.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

func (w *recWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recorder is an Observer counting what the adapters' tests look at.
type recorder struct {
	core.NopObserver
	mu        sync.Mutex
	contended int
	unlocked  []error
	outcomes  map[core.Outcome]int
	acquired  []string      // the keys of the acquires that took their lock, in order
	changed   chan struct{} // signalled (non-blocking) on every event
}

func newRecorder() *recorder {
	return &recorder{outcomes: map[core.Outcome]int{}, changed: make(chan struct{}, 1)}
}

func (r *recorder) note(f func()) {
	r.mu.Lock()
	f()
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) Contended(context.Context, core.AcquireInfo, core.Holder, int) {
	r.note(func() { r.contended++ })
}

func (r *recorder) AcquireEnd(ctx context.Context, info core.AcquireInfo, res core.AcquireResult) context.Context {
	r.note(func() {
		r.outcomes[res.Outcome]++
		if res.Outcome == core.OutcomeAcquired {
			r.acquired = append(r.acquired, info.Key)
		}
	})
	return ctx
}

func (r *recorder) Unlocked(_ context.Context, _ core.AcquireInfo, err error) {
	r.note(func() { r.unlocked = append(r.unlocked, err) })
}

func (r *recorder) read(f func(r *recorder) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f(r)
}

// await waits (on the recorder's signal, bounded) until cond holds.
func (r *recorder) await(t *testing.T, limit time.Duration, what string, cond func(r *recorder) bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for !r.read(cond) {
		select {
		case <-r.changed:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
	}
}

// signal is a one-shot event a handler and the test share.
type signal struct {
	once sync.Once
	ch   chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }
func (s *signal) fire()  { s.once.Do(func() { close(s.ch) }) }

func (s *signal) wait(t *testing.T, limit time.Duration, what string) {
	t.Helper()
	select {
	case <-s.ch:
	case <-time.After(limit):
		t.Fatalf("timed out after %v waiting for %s", limit, what)
	}
}
