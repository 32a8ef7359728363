package serve

import (
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Timeouts bound how long a client may take over a request or keep a
// connection. The lock a handler takes is held while the handler runs, and
// a handler runs as long as its client lets it: reading a body dribbled a
// byte at a time, or waiting on a stream that stays silent. The server's
// timeouts end those (the body's read fails, the connection closes), so the
// handler returns and its lock is released. They bound the client's share;
// the lock's own maximum hold bounds the handler's (see docs/deployment.md).
type Timeouts struct {
	// ReadHeader bounds reading a request's header (http.Server's
	// ReadHeaderTimeout).
	ReadHeader time.Duration
	// Read bounds reading the whole request, header and body, from its
	// first byte (ReadTimeout): a handler reading a body dribbled past it
	// gets an error and returns. The examples' requests carry their
	// arguments in the path and query, so seconds are plenty.
	Read time.Duration
	// Write bounds the time from the end of a request's header to the end
	// of its answer (WriteTimeout): the longest a handler may run, its lock
	// wait included, and still answer. Above every wait the examples allow
	// (the demo's -wait is at most a minute).
	Write time.Duration
	// Idle bounds a keep-alive connection between requests (IdleTimeout).
	Idle time.Duration

	// ConnectionIdle closes a gRPC connection without calls for that long
	// (keepalive.ServerParameters.MaxConnectionIdle).
	ConnectionIdle time.Duration
	// ConnectionAge sends a gRPC connection GOAWAY after that long (±10%),
	// and ConnectionAgeGrace then closes it, cutting calls still running:
	// together they bound a stream that stays open and silent, and with it
	// the lock a streaming handler holds (MaxConnectionAge, -Grace).
	ConnectionAge, ConnectionAgeGrace time.Duration
	// Ping is how long a gRPC connection may be silent before the server
	// pings it, PingTimeout how long it waits for the answer before closing
	// it: a client that vanished without closing its connection is found
	// (Time, Timeout).
	Ping, PingTimeout time.Duration
	// MinPing is the shortest interval at which a client may ping the
	// server; one pinging more often is disconnected (EnforcementPolicy:
	// MinTime, with pings permitted without calls, so a client may keep an
	// idle connection healthy, within ConnectionIdle).
	MinPing time.Duration
}

// Default is the examples' timeouts: every server they start has them.
var Default = Timeouts{
	ReadHeader: 5 * time.Second,
	Read:       10 * time.Second,
	Write:      2 * time.Minute,
	Idle:       2 * time.Minute,

	ConnectionIdle:     5 * time.Minute,
	ConnectionAge:      10 * time.Minute, // longer than a demo run: its clients keep one connection
	ConnectionAgeGrace: time.Minute,
	Ping:               time.Minute,
	PingTimeout:        20 * time.Second,
	MinPing:            10 * time.Second,
}

// HTTPServer returns a server of h with t's HTTP timeouts.
func (t Timeouts) HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
	}
}

// FiberConfig returns the Config of a fiber app with t's HTTP timeouts.
// fasthttp has no header timeout of its own: ReadTimeout bounds reading a
// request whole, header and body, which fasthttp does before the handler
// runs (a slow client holds no lock meanwhile).
func (t Timeouts) FiberConfig() fiber.Config {
	return fiber.Config{ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// GRPCOptions returns the options of a gRPC server with t's keepalive
// parameters and enforcement policy.
func (t Timeouts) GRPCOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle:     t.ConnectionIdle,
			MaxConnectionAge:      t.ConnectionAge,
			MaxConnectionAgeGrace: t.ConnectionAgeGrace,
			Time:                  t.Ping,
			Timeout:               t.PingTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: t.MinPing, PermitWithoutStream: true}),
	}
}
