package ordersfiber

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/examples/internal/ordershttp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, exampletest.FasthttpGoroutines...) }

// See exampletest.Router: the service, and what Config decides, served by
// Serve (which must stop cleanly).
func TestRouter(t *testing.T) { exampletest.RouterServed(t, serveRouter) }

func serveRouter(t *testing.T, cfg ordershttp.Config) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, NewRouter(cfg), lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	return "http://" + lis.Addr().String()
}

// The strings the handlers hand the book outlive their request: the book
// keeps them (an order's id and a tenant are keys of its maps). fiber hands
// a handler strings that alias fasthttp's buffers unless the app is
// Immutable, and the connection's next request overwrites them; so what
// the book was given on one connection must still read as it was sent.
func TestValuesOutliveTheRequest(t *testing.T) {
	book := &keptBook{Book: orders.NewStore(0)}
	base := serveRouter(t, ordershttp.Config{Book: book, NoLock: true})
	var want []string
	for _, v := range []string{"aa", "bb", "cc", "dd", "ee", "ff"} {
		if r := exampletest.Post(t, base+"/orders/"+v+"/pay"); r.Status != http.StatusOK {
			t.Fatalf("pay %s: %d %s", v, r.Status, r.Body)
		}
		req, _ := http.NewRequest(http.MethodPut, base+"/tenant/settings?plan=p"+v, nil)
		req.Header.Set(ordershttp.TenantHeader, "t"+v)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		want = append(want, v, "t"+v, "p"+v)
	}
	book.mu.Lock()
	defer book.mu.Unlock()
	if !slices.Equal(book.kept, want) {
		t.Errorf("the strings the book was given now read %q; sent %q", book.kept, want)
	}
}

// keptBook keeps the strings Pay and SetSettings are given.
type keptBook struct {
	orders.Book
	mu   sync.Mutex
	kept []string
}

func (b *keptBook) keep(s ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kept = append(b.kept, s...)
}

func (b *keptBook) Pay(ctx context.Context, id string, token, cents int64) (orders.Order, error) {
	b.keep(id)
	return b.Book.Pay(ctx, id, token, cents)
}

func (b *keptBook) SetSettings(ctx context.Context, tenant, plan string, token int64) (orders.Settings, error) {
	b.keep(tenant, plan)
	return b.Book.SetSettings(ctx, tenant, plan, token)
}
