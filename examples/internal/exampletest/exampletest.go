// Package exampletest runs an HTTP example's main logic in a test and
// checks the orders service behaves: the gin and echo examples (and any
// other HTTP front end of the orders service) share these checks.
package exampletest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/internal/redistest"
)

// RunFunc is an example's run: it serves until ctx ends and writes
// "listening on http://<addr>" to out once it listens.
type RunFunc func(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error

// Command checks an HTTP example's run (ordershttp.Command.Run) end to
// end: OrdersService with its locks on a real redis-server (REDIS_URL),
// and Embedded with REDIS_URL unset (its embedded miniredis).
func Command(t *testing.T, run RunFunc) {
	t.Run("real redis", func(t *testing.T) {
		srv := redistest.Start(t)
		OrdersService(t, Start(t, run, map[string]string{"REDIS_URL": "redis://" + srv.Addr()}, "-work", "5ms"))
	})
	t.Run("embedded redis", func(t *testing.T) {
		Embedded(t, Start(t, run, nil, "-work", "0"))
	})
	t.Run("port in use", func(t *testing.T) { PortInUse(t, run) })
	t.Run("ADDR", func(t *testing.T) { AddrFromEnv(t, run) })
	t.Run("-redis over REDIS_URL", func(t *testing.T) {
		// -redis "" asks for the embedded miniredis whatever REDIS_URL says.
		Embedded(t, Start(t, run, map[string]string{"REDIS_URL": "http://nope"}, "-redis", "", "-work", "0"))
	})
}

// AddrFromEnv checks that run, without -addr, listens where ADDR says. ADDR
// names a port that is taken, so that an example reading it fails naming
// it, while one that does not listens elsewhere and prints (which ends it
// at once).
func AddrFromEnv(t *testing.T, run RunFunc) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = run(ctx, nil, func(k string) string { return map[string]string{"ADDR": taken.Addr().String()}[k] }, cancelOnWrite(cancel))
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Errorf("run with ADDR=%s: %v", taken.Addr(), err)
	}
}

// cancelOnWrite is a writer that ends the run at its first output.
type cancelOnWrite context.CancelFunc

func (c cancelOnWrite) Write(p []byte) (int, error) {
	c()
	return len(p), nil
}

// PortInUse checks that run, asked to listen on a port that is taken,
// fails with an error that names the address and prints nothing: no
// banner announcing a service that is not there.
func PortInUse(t *testing.T, run RunFunc) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out strings.Builder
	err = run(ctx, []string{"-addr", taken.Addr().String()}, func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) || !strings.Contains(err.Error(), "in use") {
		t.Errorf("run on a port in use: %v", err)
	}
	if out.Len() > 0 {
		t.Errorf("run on a port in use printed:\n%s", out.String())
	}
}

// Start runs the example on a free loopback port until the test ends and
// returns the base URL it printed. env is its environment.
func Start(t *testing.T, run RunFunc, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, pw)
		pw.Close()
		done <- err
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				urls <- u
			}
		}
		_, _ = io.Copy(io.Discard, pr)
		close(urls)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("run did not return after cancel")
		}
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	select {
	case u, ok := <-urls:
		if !ok {
			err := <-done
			done <- err // for the cleanup, which waits for it
			t.Fatalf("the example exited: %v", err)
		}
		return u
	case <-time.After(15 * time.Second):
		t.Fatal("the example did not print its address")
	}
	return ""
}

// Result is one answer of the orders service.
type Result struct {
	Status int
	Token  string // the Lock-Token header
	// RetryAfter is the Retry-After header: set on a 409 from the lock,
	// not on one from the order's rules.
	RetryAfter string
	Order      orders.Order
	Body       string
}

// Post sends a POST with header name/value pairs.
func Post(t *testing.T, url string, hdr ...string) Result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return Result{}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := Result{Status: res.StatusCode, Token: res.Header.Get("Lock-Token"), RetryAfter: res.Header.Get("Retry-After"), Body: string(b)}
	_ = json.Unmarshal(b, &r.Order)
	return r
}

// OrdersService checks the service at base: concurrent payments and
// refunds of one order lose no update, the fencing token travels in
// Lock-Token and into the store, shipping five times at once ships once,
// the tenant route needs its header.
func OrdersService(t *testing.T, base string) {
	const n = 20
	res := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { res[i] = Post(t, base+"/orders/1/"+[]string{"pay", "refund"}[i%4/3]+"?amount=100") })
	}
	wg.Wait()
	okCount, lastToken := 0, int64(0)
	for _, r := range res {
		switch r.Status {
		case http.StatusOK:
			okCount++
			tok, err := strconv.ParseInt(r.Token, 10, 64)
			if err != nil || tok != r.Order.Token {
				t.Errorf("Lock-Token %q, order written with token %d", r.Token, r.Order.Token)
			}
			lastToken = max(lastToken, tok)
		case http.StatusConflict: // a refund that ran before enough payments
		default:
			t.Errorf("status %d %s", r.Status, r.Body)
		}
	}
	res1, err := http.Get(base + "/orders/1")
	if err != nil {
		t.Fatal(err)
	}
	var o orders.Order
	_ = json.NewDecoder(res1.Body).Decode(&o)
	res1.Body.Close()
	if o.Payments+o.Refunds != okCount || o.Balance != int64(100*(o.Payments-o.Refunds)) || o.Token != lastToken {
		t.Errorf("order %+v after %d successful writes (last token %d): updates were lost", o, okCount, lastToken)
	}

	ships := make([]Result, 5)
	for i := range ships {
		wg.Go(func() { ships[i] = Post(t, base+"/orders/1/ship") })
	}
	wg.Wait()
	shipped := 0
	for _, r := range ships {
		switch r.Status {
		case http.StatusOK:
			shipped++
		case http.StatusConflict: // busy (no wait) or already shipped
		default:
			t.Errorf("ship: %d %s", r.Status, r.Body)
		}
	}
	if shipped != 1 {
		t.Errorf("shipped %d times", shipped)
	}

	Amounts(t, base)

	if r := Post(t, base+"/tenant/export"); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "X-Tenant") {
		t.Errorf("export without X-Tenant: %d %s", r.Status, r.Body)
	}
	if r := Post(t, base+"/tenant/export", "X-Tenant", "acme"); r.Status != http.StatusOK || !strings.Contains(r.Body, `"number":1`) {
		t.Errorf("export: %d %s", r.Status, r.Body)
	}
}

// Amounts checks the service at base refuses, with 400 and the order
// unchanged, an ?amount= that is not a positive int64 of cents and a
// payment that would overflow the balance.
func Amounts(t *testing.T, base string) {
	const max = "9223372036854775807" // math.MaxInt64
	if r := Post(t, base+"/orders/big/pay?amount="+max); r.Status != http.StatusOK || r.Order.Balance != math.MaxInt64 {
		t.Fatalf("pay %s: %d %s", max, r.Status, r.Body)
	}
	for _, a := range []string{max, "1", "0", "-1", "abc", "1.5", "9223372036854775808"} {
		if r := Post(t, base+"/orders/big/pay?amount="+a); r.Status != http.StatusBadRequest {
			t.Errorf("pay %s on a balance of %s: %d %s", a, max, r.Status, r.Body)
		}
	}
	res, err := http.Get(base + "/orders/big")
	if err != nil {
		t.Fatal(err)
	}
	var o orders.Order
	_ = json.NewDecoder(res.Body).Decode(&o)
	res.Body.Close()
	if o.Balance != math.MaxInt64 || o.Payments != 1 {
		t.Errorf("order after refused payments: %+v", o)
	}
}

// Embedded checks the service on its embedded Redis: three payments.
func Embedded(t *testing.T, base string) {
	for i := 1; i <= 3; i++ {
		if r := Post(t, base+"/orders/7/pay"); r.Status != http.StatusOK || r.Order.Payments != i {
			t.Fatalf("pay %d: %d %s", i, r.Status, r.Body)
		}
	}
}
