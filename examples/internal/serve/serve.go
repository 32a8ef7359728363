// Package serve runs an example's HTTP server: listen, say where, serve
// until the context ends, shut down gracefully. Framework-free: it takes
// any http.Handler (a gin engine, an echo instance). Addr and Listen are
// for every example with a listen address of its own, gRPC's too, and
// Timeouts, which bound a slow client, for every server an example starts.
package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// EnvAddr is the environment variable of an example's listen address. All
// the examples with a listen address of their own (gin, echo, gRPC) read
// this one, each with its own default port, and -addr overrides it; the
// demo and the otel example listen on loopback ports of their choosing. The
// Redis is REDIS_URL's everywhere (see embedded).
const EnvAddr = "ADDR"

// Addr is the listen address: $ADDR, else def (the examples default to loopback).
func Addr(getenv func(string) string, def string) string {
	if a := getenv(EnvAddr); a != "" {
		return a
	}
	return def
}

// AddrFlag defines -addr on fs, the listen address, defaulting to Addr.
func AddrFlag(fs *flag.FlagSet, getenv func(string) string, def string) *string {
	return fs.String("addr", Addr(getenv, def), "listen address (env "+EnvAddr+")")
}

// Listen opens an example's listener on addr. An example calls it before
// it prints anything, so that a port in use fails with this error alone,
// not after a banner announcing a service that is not there.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("cannot listen on %s, the address is in use (another example still running?); choose another with -addr or %s: %w", addr, EnvAddr, err)
	case err != nil:
		return nil, fmt.Errorf("cannot listen on %s (-addr or %s): %w", addr, EnvAddr, err)
	}
	return ln, nil
}

// Run writes "listening on http://<addr>" (with the real port when the
// address asked for was :0) to out and serves h on ln until ctx ends; then
// it stops accepting and waits up to 10s for requests in flight. ln is
// closed when Run returns.
func Run(ctx context.Context, ln net.Listener, h http.Handler, out io.Writer) error {
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

// Start serves h on lis in a goroutine until Stop, with the Default
// timeouts. The demo starts its replicas with it on listeners it opened
// itself.
func Start(lis net.Listener, h http.Handler) *Server {
	s := &Server{srv: Default.HTTPServer(h), served: make(chan error, 1)}
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
