package grpclock_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/adapt"
	"github.com/lockkit/lockkit/internal/redistest"
)

// httpPayOrder stands for ginlock's `POST /orders/:id/pay` with
// ginlock.Key(Const("order"), Param("id")): ginlock is not on this branch
// yet, so this is the same thing by hand on net/http — the key built by
// core.BuildKey from the same parts (order:<id>), the lock taken through
// internal/adapt like every HTTP adapter does. Switch it to ginlock once
// both branches are merged.
func httpPayOrder(cfg *adapt.Config, w *witness, sleep time.Duration) http.Handler {
	const route = "POST /orders/{id}/pay"
	parts := []core.KeyPart[*http.Request]{
		core.Const[*http.Request]("order"),
		{Source: "param", Name: "id", Get: func(r *http.Request) (string, error) { return r.PathValue("id"), nil }},
	}
	mux := http.NewServeMux()
	mux.HandleFunc(route, func(rw http.ResponseWriter, r *http.Request) {
		key, err := core.BuildKey(r, parts)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		g := cfg.Acquire(r.Context(), key, route)
		if !g.OK() {
			if s := g.Kind.HTTPStatus(); s != 0 {
				rw.Header().Set("Content-Type", adapt.ProblemContentType)
				rw.WriteHeader(s)
				_, _ = rw.Write(adapt.ProblemFor(g.Kind, g.Err).JSON())
			}
			return
		}
		defer func() { _ = g.Release() }()
		w.run(g.Lease.Token(), sleep)
		rw.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// 40 concurrent PayOrder calls for one order, spread over two gRPC servers
// (each its own lock Client, as two replicas) sharing one Redis, plus HTTP
// requests on the same order, run one at a time: the read-sleep-write
// counter loses no update, no two sections overlap, and the fencing tokens
// rise in the order the sections ran.
func TestUnarySerialisesAcrossServersAndHTTP(t *testing.T) {
	const (
		grpcCalls = 40
		httpCalls = 10
		sleep     = 5 * time.Millisecond
	)
	srv := redistest.Start(t)
	w := &witness{}
	pay := func(ctx context.Context, r *testpb.KeyedRequest) (*testpb.PayResponse, error) {
		l, ok := core.LeaseFromContext(ctx)
		if !ok {
			return nil, status.Error(codes.FailedPrecondition, "no lease")
		}
		w.run(l.Token(), sleep)
		return &testpb.PayResponse{Token: l.Token()}, nil
	}
	replicas := []testpb.TestClient{
		serve(t, &service{keyed: pay}, unary(newClient(t, srv), grpclock.Wait(time.Minute))),
		serve(t, &service{keyed: pay}, unary(newClient(t, srv), grpclock.Wait(time.Minute))),
	}
	hs := httptest.NewServer(httpPayOrder(&adapt.Config{Client: newClient(t, srv), Wait: time.Minute}, w, sleep))
	defer hs.Close()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()

	ctx := ctxT(t, 2*time.Minute)
	start := time.Now()
	errs := make(chan error, grpcCalls+httpCalls)
	var wg sync.WaitGroup
	for i := range grpcCalls {
		wg.Go(func() {
			_, err := replicas[i%2].PayKeyed(ctx, &testpb.KeyedRequest{OrderId: "42"})
			errs <- err
		})
	}
	for range httpCalls {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/orders/42/pay", nil)
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					err = fmt.Errorf("HTTP status %d", resp.StatusCode)
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	w.check(t, grpcCalls+httpCalls)
	t.Logf("%d gRPC + %d HTTP sections of %v on order:42 serialised in %v", grpcCalls, httpCalls, sleep, time.Since(start).Round(time.Millisecond))
}
