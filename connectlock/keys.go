package connectlock

import (
	"context"
	"net/http"

	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
)

// Call is what key parts read: the call's context, its procedure, its
// request headers and its request message. Msg is nil for a stream keyed
// before its first message.
type Call struct {
	Ctx       context.Context
	Procedure string
	Header    http.Header
	Msg       any
}

// Part is one part of a lock key read from a call. Make parts with Const,
// Metadata, Field and Method, and anything else with Func; Key joins their
// values with core.JoinKey, exactly as every lockkit adapter joins theirs.
type Part struct{ p guard.Part[*Call] }

// Const is a literal part ("order"). It panics when empty, as every
// adapter's Const does.
func Const(s string) Part { return Part{guard.Const[*Call](s)} }

// Metadata is the value of a request header (case-insensitive; gRPC
// metadata on the gRPC protocols). Missing or empty is
// connect.CodeInvalidArgument; so is a header sent more than once, because
// a lock taken on one of two values would not protect a handler that reads
// the other. A "-bin" header's value is the bytes it carries, its base64
// decoded once by gRPC's rule (padded or not: rpckey.BinaryValue), as
// grpclock's Metadata reads them; one that is not base64 is
// connect.CodeInvalidArgument.
func Metadata(name string) Part { return Part{rpckey.Metadata(name, requestHeader, false)} }

func requestHeader(c *Call, name string) []string { return c.Header.Values(name) }

// Field is the value of a field of the request message by a dotted path of
// proto or JSON names ("order.id", "orderId"); rpckey.Field says the rules.
// A path the message cannot be keyed by is the server's mistake
// (connect.CodeInternal); a field not set is the caller's
// (connect.CodeInvalidArgument). On a stream it needs FromFirstMessage.
func Field(path string) Part { return Part{rpckey.Field(path, callMsg)} }

func callMsg(c *Call) any { return c.Msg }

// Method is the call's procedure ("/orders.v1.Orders/PayOrder"). With it
// alone the lock is procedure-wide (KeyFromRoute); with other parts it
// scopes a key to one procedure.
func Method() Part { return Part{rpckey.Method(callProcedure)} }

func callProcedure(c *Call) string { return c.Procedure }

// Func is a part computed by f. Return "" (nil error) for a missing value
// and an error for an unreadable one (both connect.CodeInvalidArgument), or
// an error wrapping core.ErrKeyConfig for a server-side mistake
// (connect.CodeInternal). name only appears in error messages.
func Func(name string, f func(*Call) (string, error)) Part { return Part{guard.Func(name, f)} }

// Option configures an interceptor. Each interceptor keeps its own copy of
// the configuration: there is no global state.
type Option func(*config)

// Key makes the lock key from parts, their values joined like every lockkit
// adapter joins them (core.JoinKey): Key(Const("order"), Field("order_id"))
// gives "order:42", the key ginlock and grpclock build for the same order.
// It replaces the default of unary calls, the message's LockKey()
// (rpckey.LockKeyer). Give Key more than once to lock several resources per
// call, all or nothing, in one canonical order.
func Key(parts ...Part) Option {
	ps := make([]guard.Part[*Call], len(parts))
	for i, p := range parts {
		ps[i] = p.p
	}
	return func(c *config) { c.rpc.Keys = append(c.rpc.Keys, ps) }
}

// KeyFromRoute locks the whole route, which for an RPC is its procedure:
// one call of it at a time across all replicas, whatever its message says.
// It is an explicit choice, never a fallback; Key and KeyFromRoute are
// alternatives.
func KeyFromRoute() Option { return func(c *config) { c.rpc.Route = true } }

// FromFirstMessage keys a stream by its first received message (with Key's
// parts, which may then read fields, or else the message's LockKey())
// instead of by its headers before the handler runs. The lock is taken
// inside the handler's first Receive; a stream that ends before any message
// takes none. Unary calls ignore it: their message is known up front.
func FromFirstMessage() Option { return func(c *config) { c.rpc.FirstMessage = true } }
