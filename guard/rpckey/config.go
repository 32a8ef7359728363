package rpckey

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockkit/lockkit/guard"
)

// Config is what an RPC adapter's options set: the shared settings
// (guard.Config, whose Keys it fills), the keys as their parts, and how a
// stream is keyed, its answers and its framework's Wire. New checks it
// into a Policy, with the rules every RPC adapter shares.
type Config[R any] struct {
	Guard guard.Config[R]
	// Keys are the parts of each Key option (several: taken together).
	Keys [][]guard.Part[R]
	// Route keys every call by its procedure (KeyFromRoute).
	Route bool
	// FirstMessage keys a stream by its first message (FromFirstMessage).
	FirstMessage bool
	// Stream says the policy locks streams (a stream interceptor).
	Stream bool
	// Msg and Procedure read a call's request message and procedure: the
	// default key of a call with no key option is its message's LockKey().
	Msg       func(R) any
	Procedure func(R) string
	// Respond are the adapter's On* answers.
	Respond guard.RPCResponders
	// Wire is how the adapter's framework carries an answer.
	Wire Wire
	// OnRelease is told what a release reports (OnReleaseError).
	OnRelease func(ctx context.Context, procedure string, err error)
}

// New checks c and returns its policy. A call with no key option is keyed
// by its message's LockKey(): a unary call, or a stream keyed by its first
// message. A stream keyed before its first message needs a key option, and
// its parts cannot read a message field (Field). The error joins every
// mistake.
func New[R any](c Config[R]) (*Policy[R], error) {
	var errs []error
	if c.Wire.Answer == nil || c.Wire.Code == nil || c.Wire.Details == nil {
		errs = append(errs, errors.New("the adapter's Wire lacks Answer, Code or Details"))
	}
	keyed := len(c.Keys) > 0 || c.Route
	if c.Stream && !c.FirstMessage {
		if !keyed {
			errs = append(errs, errors.New("a stream has no key source: give Key(...) with Metadata/Const/Func parts, KeyFromRoute(), or FromFirstMessage() to key the stream by its first message (Key's parts or its LockKey())"))
		}
		for _, ps := range c.Keys {
			for _, p := range ps {
				if p.Source == FieldSource {
					errs = append(errs, fmt.Errorf("Field(%q) needs a message: on a stream add FromFirstMessage()", p.Name))
				}
			}
		}
	}
	g := c.Guard
	g.Keys = nil
	for _, ps := range c.Keys {
		g.Keys = append(g.Keys, guard.Join(ps...))
	}
	if c.Route {
		g.Keys = append(g.Keys, guard.Alone(guard.Join(Method(c.Procedure))))
	}
	if !keyed {
		g.Keys = []guard.Key[R]{LockKey(c.Msg, c.Procedure)}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p, err := guard.New(g)
	if err != nil {
		return nil, err
	}
	return &Policy[R]{g: p, c: c}, nil
}
