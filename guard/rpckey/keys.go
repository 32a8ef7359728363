package rpckey

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// LockKeyer is a request message that names its own lock key, e.g.
//
//	func (r *PayOrderRequest) LockKey() (string, error) { return core.JoinKey("order", r.GetOrderId()) }
//
// It is the default key source of unary calls (and of streams keyed by
// their first message with no key option). An error, or an empty key, is
// the caller's fault: InvalidArgument.
type LockKeyer interface {
	LockKey() (string, error)
}

// ErrNoKeySource is the error of a call that has neither a key option nor
// a message with LockKey(): the server's mistake (Internal), matching
// core.ErrKeyConfig.
var ErrNoKeySource = fmt.Errorf("%w: no key source", core.ErrKeyConfig)

// LockKey is the key a call's message names (LockKeyer): msg(r) is the
// message, procedure(r) the call's procedure, for the error of a message
// without LockKey().
func LockKey[R any](msg func(R) any, procedure func(R) string) guard.Key[R] {
	return guard.KeyFunc(func(r R) (string, error) {
		m := msg(r)
		k, ok := m.(LockKeyer)
		if !ok {
			return "", fmt.Errorf("%w for %s: message %T has no LockKey() method and no Key option was given", ErrNoKeySource, procedure(r), m)
		}
		key, err := k.LockKey()
		switch {
		case err != nil && errors.Is(err, core.ErrKeyConfig), err != nil && errors.Is(err, core.ErrInvalidKey):
			return "", fmt.Errorf("%s.LockKey(): %w", msgName(m), err)
		case err != nil:
			return "", fmt.Errorf("%w: %s.LockKey(): %w", core.ErrInvalidKey, msgName(m), err)
		case key == "":
			return "", fmt.Errorf("%w: %s.LockKey() returned an empty key", core.ErrInvalidKey, msgName(m))
		}
		return key, nil
	})
}

// msgName names a message for the caller: its proto name, not a Go type.
func msgName(m any) string {
	if pm, ok := m.(proto.Message); ok {
		return string(pm.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("%T", m)
}

// Metadata is the value of an incoming metadata entry (gRPC metadata, a
// connect request header), values(r, name) its values. Missing or empty is
// InvalidArgument; so is an entry sent more than once, because a lock taken
// on one of two values would not protect a handler that reads the other.
// The name is lower-cased, as gRPC keys metadata; it panics when empty.
//
// A binary entry (a name ending in "-bin") is base64 on the wire, and its
// value is the bytes it carries, decoded once by gRPC's rule (BinaryValue):
// binDecoded says values hands them over decoded already (grpc-go does),
// else (connect hands headers over as sent) Metadata decodes them. So
// "x-order-bin" carrying 42 is the part "42" on both protocols, whether
// the client padded its base64 ("NDI=") or not ("NDI").
func Metadata[R any](name string, values func(r R, name string) []string, binDecoded bool) guard.Part[R] {
	if name == "" {
		panic("lockkit: Metadata(\"\"): empty metadata key")
	}
	name = strings.ToLower(name)
	decode := strings.HasSuffix(name, binSuffix) && !binDecoded
	return guard.NewPart("metadata", name, func(r R) (string, error) {
		vals := values(r, name)
		switch {
		case len(vals) > 1:
			return "", fmt.Errorf("sent %d times; want one value", len(vals))
		case len(vals) == 0:
			return "", nil
		case decode:
			return BinaryValue(vals[0])
		}
		return vals[0], nil
	})
}

// binSuffix ends the name of a binary metadata entry.
const binSuffix = "-bin"

// ErrBinaryValue is the error (InvalidArgument) of a binary metadata entry
// that is not base64.
var ErrBinaryValue = errors.New("a -bin metadata value must be base64, padded or not")

// BinaryValue is the bytes a binary metadata entry's value v carries, by
// gRPC's rule (grpc-go's decodeBinHeader): standard base64, padded when
// its length is a multiple of 4, unpadded otherwise. The error does not
// repeat the value.
func BinaryValue(v string) (string, error) {
	enc := base64.RawStdEncoding
	if len(v)%4 == 0 {
		enc = base64.StdEncoding
	}
	b, err := enc.DecodeString(v)
	if err != nil {
		return "", ErrBinaryValue
	}
	return string(b), nil
}

// Method is the call's procedure, procedure(r) ("/orders.v1.Orders/PayOrder").
// With it alone the lock is procedure-wide (KeyFromRoute); with other parts
// it scopes a key to one procedure.
func Method[R any](procedure func(R) string) guard.Part[R] {
	return guard.NewPart("method", "full method", func(r R) (string, error) { return procedure(r), nil })
}
