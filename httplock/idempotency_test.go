package httplock_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/httplock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// An owner whose claim was taken over while its handler ran (here: its
// record wiped and claimed by another owner, which stored its answer) does
// not send its own answer, held back until its record is stored: its
// client gets 409 + Retry-After, and the retry gets the one stored answer.
// A handler that flushed has sent its answer already: its client keeps it.
func TestIdempotentTakenOver(t *testing.T) {
	srv := redistest.Start(t)
	client := testkit.Client(t, srv.NewClient())
	other := testkit.Client(t, srv.NewClient())
	ctx := testkit.Context(t, 30*time.Second)
	takeOver := func(t *testing.T, r *http.Request, route, body string) {
		claim, ok := httplock.Claim(r)
		if !ok {
			t.Error("the handler runs without a claim")
			return
		}
		if err := srv.Client.FlushAll(ctx).Err(); err != nil {
			t.Error(err)
		}
		fp := guard.Fingerprint(http.MethodPost, route, "", "", []byte(body), r.PathValue("id"))
		cl, err := other.Claim(ctx, claim.Key(), core.ClaimRequest{Fingerprint: fp})
		if err != nil || cl.Lease == nil {
			t.Errorf("the other owner's claim: %+v %v", cl, err)
			return
		}
		payload, _ := guard.EncodeResponse(guard.Response{Status: http.StatusCreated, Body: []byte("theirs")})
		if err := cl.Lease.Complete(ctx, payload); err != nil {
			t.Error(err)
		}
	}
	mux := http.NewServeMux()
	once := httplock.Idempotent(client)
	mux.Handle("POST /pay/{id}", once(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		takeOver(t, r, "/pay/:id", "held")
		w.Header().Set("Set-Cookie", "mine=1")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("mine"))
	})))
	mux.Handle("POST /stream/{id}", once(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("mine"))
		w.(http.Flusher).Flush()
		takeOver(t, r, "/stream/:id", "streamed")
	})))
	post := func(path, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)).WithContext(ctx)
		req.Header.Set("Idempotency-Key", "k")
		mux.ServeHTTP(w, req)
		return w
	}
	w := post("/pay/1", "held")
	if w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" || strings.Contains(w.Body.String(), "mine") || w.Header().Get("Set-Cookie") != "" {
		t.Errorf("the owner taken over got %d %q %v, want 409 + Retry-After and nothing of its answer", w.Code, w.Body.String(), w.Header())
	}
	if w := post("/pay/1", "held"); w.Code != http.StatusCreated || w.Body.String() != "theirs" || w.Header().Get(guard.HeaderIdempotentReplayed) != "true" {
		t.Errorf("the retry got %d %q, want the stored answer", w.Code, w.Body.String())
	}
	if w := post("/stream/1", "streamed"); w.Code != http.StatusCreated || w.Body.String() != "mine" {
		t.Errorf("a streamed answer taken over: %d %q, want the answer it sent", w.Code, w.Body.String())
	}
	if w := post("/stream/1", "streamed"); w.Body.String() != "theirs" {
		t.Errorf("the retry after a streamed answer got %q, want the stored one", w.Body.String())
	}
}
