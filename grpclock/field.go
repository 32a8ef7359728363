package grpclock

import "github.com/lockkit/lockkit/guard/rpckey"

// Field is the value of a field of the request message, by a dotted path of
// proto names or JSON names ("order.id", "order_id", "orderId"), read with
// protoreflect (no generated code of yours is needed); rpckey.Field says
// the rules. A path the message cannot be keyed by is the server's mistake
// (codes.Internal, a *rpckey.FieldPathError); a field not set is the
// caller's (codes.InvalidArgument). On a stream it needs FromFirstMessage.
func Field(path string) Part { return Part{rpckey.Field(path, callMsg)} }

func callMsg(c *Call) any { return c.Msg }
