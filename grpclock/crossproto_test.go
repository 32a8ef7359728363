package grpclock_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/grpclock/internal/testpb"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// httpPayOrder is the HTTP side of the same service: gin with ginlock on
// `POST /orders/:id/pay`, keyed ginlock.Key(Const("order"), Param("id")):
// the same parts give the same key, order:<id>, as the gRPC LockKey().
func httpPayOrder(c *core.Client, w *witness, sleep time.Duration) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.POST("/orders/:id/pay", ginlock.New(c, ginlock.Key(ginlock.Const("order"), ginlock.Param("id")), ginlock.Wait(time.Minute)),
		func(gc *gin.Context) {
			l, ok := ginlock.Lease(gc)
			if !ok {
				gc.Status(http.StatusInternalServerError)
				return
			}
			w.run(l.Token(), sleep)
			gc.Status(http.StatusNoContent)
		})
	return r
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
	hs := httptest.NewServer(httpPayOrder(newClient(t, srv), w, sleep))
	defer hs.Close()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()

	ctx := testkit.Context(t, 2*time.Minute)
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
