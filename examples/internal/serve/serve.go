// Package serve runs an example's HTTP server: listen, say where, serve
// until the context ends, shut down gracefully. Framework-free: it takes
// any http.Handler (a gin engine, an echo instance).
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Addr is the listen address: $ADDR, else def (the examples default to loopback).
func Addr(getenv func(string) string, def string) string {
	if a := getenv("ADDR"); a != "" {
		return a
	}
	return def
}

// Run listens on addr, writes "listening on http://<addr>" (with the real
// port when addr ends in :0) to out, and serves h until ctx ends; then it
// stops accepting and waits up to 10s for requests in flight.
func Run(ctx context.Context, addr string, h http.Handler, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	fmt.Fprintf(out, "listening on http://%s\n", ln.Addr())
	s := Start(ln, h)
	select {
	case err := <-s.served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Stop(sctx)
}

// Server is h being served on a listener in the background (Start).
type Server struct {
	srv    *http.Server
	served chan error // what Serve returned; sent once
}

// Start serves h on lis in a goroutine until Stop. The demo starts its
// replicas with it on listeners it opened itself.
func Start(lis net.Listener, h http.Handler) *Server {
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, served: make(chan error, 1)}
	go func() { s.served <- s.srv.Serve(lis) }()
	return s
}

// Stop stops accepting, waits for requests in flight until ctx ends, and
// returns once the serving goroutine has. Call it once.
func (s *Server) Stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
