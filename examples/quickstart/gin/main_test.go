package main

import (
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
	addr := quicktest.Start(t, serve, routes(srv.Client(), g.Work))
	quicktest.Run(t, srv.Client(), g, quicktest.HTTPCalls("http://"+addr))
}

func TestOpenLocks(t *testing.T) { quicktest.OpenLocks(t, openLocks) }
