package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/quickstart/internal/quicktest"
	"github.com/lockkit/lockkit/locktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The program's routes and server: two payments of order 42 take turns,
// and a shipment meanwhile is answered 409.
func TestOneOrderAtATime(t *testing.T) {
	srv := locktest.New(t)
	g := quicktest.NewGate(t)
	base := start(t, routes(srv.Client(), g.Work))
	quicktest.Run(t, srv.Client(), g, quicktest.Calls{
		Pay: func(ctx context.Context) (int64, error) {
			body, err := post(ctx, base+"/orders/42/pay", http.StatusOK)
			if err != nil {
				return 0, err
			}
			_, tok, _ := strings.Cut(strings.TrimSpace(body), "fencing token ")
			return strconv.ParseInt(tok, 10, 64)
		},
		Refused: func(ctx context.Context) error {
			_, err := post(ctx, base+"/orders/42/ship", http.StatusConflict)
			return err
		},
	})
}

func TestOpenLocks(t *testing.T) { quicktest.OpenLocks(t, openLocks) }

// start serves h with the program's serve until the test ends, and returns
// its base URL.
func start(t *testing.T, h http.Handler) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, lis, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	return "http://" + lis.Addr().String()
}

// post sends a POST and returns its body when its status is want (and a
// 409 carries Retry-After).
func post(ctx context.Context, url string, want int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != want || (want == http.StatusConflict && resp.Header.Get("Retry-After") == "") {
		return "", fmt.Errorf("POST %s: %d %s (Retry-After %q), want %d", url, resp.StatusCode, body, resp.Header.Get("Retry-After"), want)
	}
	return string(body), nil
}
