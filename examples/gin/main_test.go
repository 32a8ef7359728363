package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/internal/orders"
	"github.com/lockkit/lockkit/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs the example with args and env until the test ends; it returns
// the base URL it printed.
func start(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, pw)
		pw.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				urls <- u
			}
		}
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
			t.Fatalf("the example exited: %v", <-done)
		}
		return u
	case <-time.After(15 * time.Second):
		t.Fatal("the example did not print its address")
	}
	return ""
}

type result struct {
	status int
	token  string
	order  orders.Order
	body   string
}

func post(t *testing.T, url string, hdr ...string) result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return result{}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := result{status: res.StatusCode, token: res.Header.Get("Lock-Token"), body: string(b)}
	_ = json.Unmarshal(b, &r.order)
	return r
}

// The example on a real Redis: concurrent payments on one order lose no
// update, the fencing token travels in Lock-Token and into the store,
// shipping twice gets one 200, the tenant route needs its header.
func TestOrdersService(t *testing.T) {
	srv := redistest.Start(t)
	base := start(t, map[string]string{"REDIS_URL": "redis://" + srv.Addr()}, "-work", "5ms")
	const n = 20
	res := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { res[i] = post(t, base+"/orders/1/"+[]string{"pay", "refund"}[i%4/3]+"?amount=100") })
	}
	wg.Wait()
	okCount, lastToken := 0, int64(0)
	for _, r := range res {
		if r.status == http.StatusOK {
			okCount++
			tok, err := strconv.ParseInt(r.token, 10, 64)
			if err != nil || tok != r.order.Token {
				t.Errorf("Lock-Token %q, order written with token %d", r.token, r.order.Token)
			}
			lastToken = max(lastToken, tok)
		} else if r.status != http.StatusConflict { // a refund that ran before any payment: ErrNotPaid
			t.Errorf("status %d %s", r.status, r.body)
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

	ships := make([]result, 5)
	for i := range ships {
		wg.Go(func() { ships[i] = post(t, base+"/orders/1/ship") })
	}
	wg.Wait()
	shipped := 0
	for _, r := range ships {
		switch r.status {
		case http.StatusOK:
			shipped++
		case http.StatusConflict: // busy (no wait) or already shipped
		default:
			t.Errorf("ship: %d %s", r.status, r.body)
		}
	}
	if shipped != 1 {
		t.Errorf("shipped %d times", shipped)
	}

	if r := post(t, base+"/tenant/export"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "X-Tenant") {
		t.Errorf("export without X-Tenant: %d %s", r.status, r.body)
	}
	if r := post(t, base+"/tenant/export", "X-Tenant", "acme"); r.status != http.StatusOK || !strings.Contains(r.body, `"number":1`) {
		t.Errorf("export: %d %s", r.status, r.body)
	}
}

// With REDIS_URL unset the example runs on its embedded miniredis.
func TestEmbeddedRedis(t *testing.T) {
	base := start(t, nil, "-work", "0")
	for i := 1; i <= 3; i++ {
		if r := post(t, base+"/orders/7/pay"); r.status != http.StatusOK || r.order.Payments != i {
			t.Fatalf("pay %d: %d %s", i, r.status, r.body)
		}
	}
}
