package builders

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/connectlock"
	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Connect serves the suite's methods with connect-go (the Connect protocol,
// over HTTP/1.1) and connectlock.
var Connect = conformance.RPCAdapter{Name: "connect", Serve: serveConnect}

// connectOptions are m's connectlock options.
func connectOptions(m conformance.Method) []connectlock.Option {
	var key connectlock.Option
	if m.Metadata != "" {
		key = connectlock.Key(connectlock.Const(m.Prefix), connectlock.Metadata(m.Metadata))
	} else {
		key = connectlock.Key(connectlock.Const(m.Prefix), connectlock.Field(m.Field))
	}
	opts := []connectlock.Option{key,
		connectlock.Wait(m.Wait), connectlock.MaxHold(m.MaxHold), connectlock.Limit(m.Limit), connectlock.AcquireOptions(m.AcquireOptions...)}
	for _, o := range []struct {
		given bool
		opt   func() connectlock.Option
	}{
		{m.NoWait, connectlock.NoWait},
		{m.FailOpen, connectlock.FailOpen},
		{m.RW == conformance.RWRead, connectlock.ReadSide},
		{m.RW == conformance.RWWrite, connectlock.WriteSide},
		{m.Stream || m.SendHandler != nil, connectlock.FromFirstMessage},
		{m.ReleaseError != nil, func() connectlock.Option {
			return connectlock.OnReleaseError(func(_ context.Context, _ string, err error) { m.ReleaseError(err) })
		}},
	} {
		if o.given {
			opts = append(opts, o.opt())
		}
	}
	if m.Idempotency != nil {
		opts = append(opts, connectlock.Idempotent(connectIdempotency(m)...))
	}
	if m.NilResponders {
		opts = append(opts, customThenNil(connectlock.Responder(func(context.Context, *connectlock.Rejection) error {
			return connect.NewError(connect.CodeDataLoss, errors.New("custom"))
		}),
			connectlock.OnContended, connectlock.OnLimited, connectlock.OnUnavailable, connectlock.OnBadKey, connectlock.OnMisconfigured, connectlock.OnClientGone, connectlock.OnLost)...)
	}
	return opts
}

// connectIdempotency are m's connectlock idempotency options.
func connectIdempotency(m conformance.Method) []connectlock.IdempotencyOption {
	x := m.Idempotency
	opts := []connectlock.IdempotencyOption{connectlock.IdempotencyWait(x.Wait)}
	if x.Required {
		opts = append(opts, connectlock.IdempotencyRequired())
	}
	if x.Scope != "" {
		opts = append(opts, connectlock.IdempotencyScope(connectlock.Metadata(x.Scope)))
	}
	return opts
}

func serveConnect(t testing.TB, client *core.Client, methods ...conformance.Method) conformance.Caller {
	mux := http.NewServeMux()
	for _, m := range methods {
		p := procedure(m.Name)
		if m.SendHandler != nil {
			mux.Handle(p, connect.NewServerStreamHandler(p, connectServerStream(m),
				connect.WithInterceptors(connectlock.StreamInterceptor(client, connectOptions(m)...))))
			continue
		}
		if m.Stream {
			mux.Handle(p, connect.NewClientStreamHandler(p, connectStream(m),
				connect.WithInterceptors(connectlock.StreamInterceptor(client, connectOptions(m)...))))
			continue
		}
		if m.Answer != nil {
			ic := connectlock.UnaryInterceptor(client, connectOptions(m)...)
			if m.Idempotency != nil && m.Idempotency.NoLock {
				ic = connectlock.IdempotentInterceptor(client, connectIdempotency(m)...)
			}
			mux.Handle(p, connect.NewUnaryHandler(p, connectAnswer(m), connect.WithInterceptors(ic)))
			continue
		}
		mux.Handle(p, connect.NewUnaryHandler(p, connectUnary(m),
			connect.WithInterceptors(connectlock.UnaryInterceptor(client, connectOptions(m)...))))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Client().CloseIdleConnections()
		srv.Close()
	})
	return connectCaller{srv}
}

func connectUnary(m conformance.Method) func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
	return func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
		l, ok := core.LeaseFromContext(ctx)
		if err := m.Handler(ctx, req.Msg.GetValue(), l, ok); err != nil {
			return nil, err
		}
		return connect.NewResponse(&emptypb.Empty{}), nil
	}
}

func connectAnswer(m conformance.Method) func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
	return func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
		claim, _ := core.ClaimFromContext(ctx)
		v, err := m.Answer(ctx, req.Msg.GetValue(), claim)
		if err != nil {
			return nil, err
		}
		res := connect.NewResponse(wrapperspb.String(v))
		res.Header().Set("Location", "/answers/"+v)
		res.Header().Set("X-Answer", v)
		return res, nil
	}
}

func connectStream(m conformance.Method) func(context.Context, *connect.ClientStream[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
	return func(ctx context.Context, s *connect.ClientStream[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
		recv := func() (string, error) {
			if s.Receive() {
				return s.Msg().GetValue(), nil
			}
			return "", s.Err()
		}
		if err := m.StreamHandler(ctx, recv); err != nil {
			return nil, err
		}
		return connect.NewResponse(&emptypb.Empty{}), nil
	}
}

type connectCaller struct{ srv *httptest.Server }

func (c connectCaller) client(name string) *connect.Client[wrapperspb.StringValue, emptypb.Empty] {
	return connect.NewClient[wrapperspb.StringValue, emptypb.Empty](c.srv.Client(), c.srv.URL+procedure(name))
}

func (c connectCaller) Call(ctx context.Context, name, id string, md ...string) conformance.Reply {
	req := connect.NewRequest(wrapperspb.String(id))
	for i := 0; i+1 < len(md); i += 2 {
		req.Header().Add(md[i], md[i+1]) // as given: connect sends headers as they are
	}
	res, err := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](c.srv.Client(), c.srv.URL+procedure(name)).CallUnary(ctx, req)
	r := connectReply(err)
	if err == nil { // an Empty answer reads as ""
		h := res.Header()
		r.Value, r.Replayed, r.Location, r.XAnswer = res.Msg.GetValue(), h.Get(rpckey.MetadataIdempotentReplayed) == "true", h.Get("Location"), h.Get("X-Answer")
	}
	return r
}

func connectServerStream(m conformance.Method) func(context.Context, *connect.Request[wrapperspb.StringValue], *connect.ServerStream[wrapperspb.StringValue]) error {
	return func(ctx context.Context, req *connect.Request[wrapperspb.StringValue], s *connect.ServerStream[wrapperspb.StringValue]) error {
		return m.SendHandler(ctx, req.Msg.GetValue(), func(v string) error { return s.Send(wrapperspb.String(v)) })
	}
}

func (c connectCaller) Watch(ctx context.Context, name, id string) error {
	p := procedure(name)
	_, err := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](c.srv.Client(), c.srv.URL+p).CallServerStream(ctx, connect.NewRequest(wrapperspb.String(id)))
	return err
}

func (c connectCaller) Stream(ctx context.Context, name string) (conformance.ClientStream, error) {
	return connectClientStream{c.client(name).CallClientStream(ctx)}, nil
}

type connectClientStream struct {
	s *connect.ClientStreamForClient[wrapperspb.StringValue, emptypb.Empty]
}

func (s connectClientStream) Send(id string) error { return s.s.Send(wrapperspb.String(id)) }

func (s connectClientStream) CloseAndReceive() conformance.Reply {
	_, err := s.s.CloseAndReceive()
	return connectReply(err)
}

// connectReply is what a connect-go client got.
func connectReply(err error) conformance.Reply {
	if err == nil {
		return conformance.Reply{}
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return conformance.Reply{Err: err}
	}
	r := conformance.Reply{Code: guard.Code(ce.Code()), Message: ce.Message(), Pushback: ce.Meta().Get(guard.PushbackTrailer)}
	for _, d := range ce.Details() {
		if v, _ := d.Value(); v != nil {
			if ri, ok := v.(*errdetails.RetryInfo); ok {
				r.RetryDelay, r.HasRetry = ri.GetRetryDelay().AsDuration(), true
			}
		}
	}
	return r
}
