package grpclock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
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

// LockKeyer is a request message that names its own lock key, e.g.
//
//	func (r *PayOrderRequest) LockKey() (string, error) { return core.JoinKey("order", r.GetOrderId()) }
//
// It is the default key source of unary calls (and of streams with
// FromFirstMessage and no Key option). An error, or an empty key, is the
// caller's fault: codes.InvalidArgument.
type LockKeyer interface {
	LockKey() (string, error)
}

// Errors of the key sources.
var (
	// ErrMisconfigured matches every server-side key mistake (no key source,
	// a field path the message does not have or cannot key by): the call is
	// answered codes.Internal. A Func part may wrap it to say the same.
	ErrMisconfigured = fmt.Errorf("grpclock: misconfigured lock key: %w", core.ErrKeyConfig)
	// ErrNoKeySource: the call has neither a Key option nor a message with
	// LockKey(). It matches ErrMisconfigured.
	ErrNoKeySource = fmt.Errorf("%w: no key source", ErrMisconfigured)
)

// Const is a literal part ("order"). It panics when empty, as every
// adapter's Const does.
func Const(s string) Part { return Part{guard.Const[*Call](s)} }

// Metadata is the value of an incoming metadata key (case-insensitive, as
// gRPC lower-cases them). Missing or empty → codes.InvalidArgument; so is a
// key sent more than once, because a lock taken on one of two values would
// not protect a handler that reads the other.
func Metadata(name string) Part {
	if name == "" {
		panic("grpclock: Metadata(\"\"): empty metadata key")
	}
	name = strings.ToLower(name)
	return Part{guard.NewPart("metadata", name, func(c *Call) (string, error) {
		vals := metadata.ValueFromIncomingContext(c.Ctx, name)
		if len(vals) > 1 {
			return "", fmt.Errorf("sent %d times; want one value", len(vals))
		}
		if len(vals) == 0 {
			return "", nil
		}
		return vals[0], nil
	})}
}

// Method is the call's full method ("/orders.v1.Orders/PayOrder"). With it
// alone the lock is method-wide (KeyFromRoute); with other parts it scopes
// a key to one method, e.g. Key(Method(), Metadata("x-tenant")).
func Method() Part {
	return Part{guard.NewPart("method", "full method", func(c *Call) (string, error) { return c.FullMethod, nil })}
}

// Func is a part computed by f. Return "" (nil error) for a missing value and
// an error for an unreadable one (both codes.InvalidArgument), or an error
// wrapping ErrMisconfigured for a server-side mistake (codes.Internal). name
// only appears in error messages.
func Func(name string, f func(*Call) (string, error)) Part {
	return Part{guard.Func(name, f)}
}

// lockKey is the default key of unary calls: the message's LockKey().
func lockKey(call *Call) (string, error) {
	k, ok := call.Msg.(LockKeyer)
	if !ok {
		return "", fmt.Errorf("%w for %s: message %T has no LockKey() method and no grpclock.Key option was given", ErrNoKeySource, call.FullMethod, call.Msg)
	}
	key, err := k.LockKey()
	switch {
	case err != nil && errors.Is(err, ErrMisconfigured):
		return "", err
	case err != nil && errors.Is(err, core.ErrInvalidKey):
		return "", fmt.Errorf("%s.LockKey(): %w", msgName(call.Msg), err)
	case err != nil:
		return "", fmt.Errorf("%w: %s.LockKey(): %w", core.ErrInvalidKey, msgName(call.Msg), err)
	case key == "":
		return "", fmt.Errorf("%w: %s.LockKey() returned an empty key", core.ErrInvalidKey, msgName(call.Msg))
	}
	return key, nil
}

// msgName names a message for the caller: its proto name, not a Go type.
func msgName(m any) string {
	if pm, ok := m.(proto.Message); ok {
		return string(pm.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("%T", m)
}
