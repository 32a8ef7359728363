package grpclock

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// Call is what key parts read: the call's context (incoming metadata), its
// full method and its request message. Msg is nil for a stream keyed before
// its first message.
type Call struct {
	Ctx        context.Context
	FullMethod string
	Msg        any
}

// Part is one part of a lock key read from a call. Make parts with
// Const, Metadata, Field and Method, and anything else with Func; Key joins
// their values with core.JoinKey, exactly as the HTTP adapters join theirs.
type Part struct{ p guard.Part[*Call] }

// Const is a literal part ("order"). It panics when empty, as every
// adapter's Const does.
func Const(s string) Part { return Part{guard.Const[*Call](s)} }

// Metadata is the value of an incoming metadata key (case-insensitive, as
// gRPC lower-cases them). Missing or empty → codes.InvalidArgument; so is a
// key sent more than once, because a lock taken on one of two values would
// not protect a handler that reads the other. A "-bin" key's value is the
// bytes it carries (grpc-go decodes them), as connectlock's Metadata reads
// them (rpckey.Metadata).
func Metadata(name string) Part { return Part{rpckey.Metadata(name, incomingMetadata, true)} }

func incomingMetadata(c *Call, name string) []string {
	return metadata.ValueFromIncomingContext(c.Ctx, name)
}

// Method is the call's full method ("/orders.v1.Orders/PayOrder"). With it
// alone the lock is method-wide (KeyFromRoute); with other parts it scopes
// a key to one method, e.g. Key(Method(), Metadata("x-tenant")).
func Method() Part { return Part{rpckey.Method(callMethod)} }

func callMethod(c *Call) string { return c.FullMethod }

// Func is a part computed by f. Return "" (nil error) for a missing value and
// an error for an unreadable one (both codes.InvalidArgument), or an error
// wrapping core.ErrKeyConfig for a server-side mistake (codes.Internal).
// name only appears in error messages.
func Func(name string, f func(*Call) (string, error)) Part {
	return Part{guard.Func(name, f)}
}
