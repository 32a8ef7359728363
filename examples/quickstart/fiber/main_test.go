package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
	exampleserve "github.com/lockkit/lockkit/examples/internal/serve"
	"github.com/lockkit/lockkit/examples/quickstart/internal/quicktest"
	"github.com/lockkit/lockkit/locktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, exampletest.FasthttpGoroutines...) }

// The program's routes and server: two payments of order 42 take turns,
// and a shipment meanwhile is answered 409.
func TestOneOrderAtATime(t *testing.T) {
	srv := locktest.New(t)
	g := quicktest.NewGate(t)
	app := newApp()
	routes(app, srv.Client(), g.Work)
	addr := quicktest.Start(t, serve, app)
	quicktest.Run(t, srv.Client(), g, quicktest.HTTPCalls("http://"+addr))
}

func TestOpenLocks(t *testing.T) { quicktest.OpenLocks(t, openLocks) }

// The server's timeouts are the other examples' (serve.Default), spelled
// in fiber's Config as every fiber server of the examples has them.
func TestTimeouts(t *testing.T) {
	got, want := newApp().Config(), exampleserve.Default.FiberConfig()
	if got.ReadTimeout != want.ReadTimeout || got.WriteTimeout != want.WriteTimeout || got.IdleTimeout != want.IdleTimeout {
		t.Errorf("read %v, write %v, idle %v; want %v, %v, %v (serve.Default)",
			got.ReadTimeout, got.WriteTimeout, got.IdleTimeout, want.ReadTimeout, want.WriteTimeout, want.IdleTimeout)
	}
}
