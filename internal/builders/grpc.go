package builders

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/grpclock"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/guard/rpckey"
	"github.com/lockkit/lockkit/testing/conformance"
)

// suiteService is the conformance suite's RPC service, as every RPC
// builder serves it: each Method is /lockkit.conformance.v1.Suite/<Name>,
// its messages google.protobuf.StringValue (the id) and Empty.
const suiteService = "lockkit.conformance.v1.Suite"

func procedure(m string) string { return "/" + suiteService + "/" + m }

// GRPC serves the suite's methods with grpc-go and grpclock.
var GRPC = conformance.RPCAdapter{Name: "grpc", Serve: serveGRPC}

// grpcOptions are m's grpclock options.
func grpcOptions(m conformance.Method) []grpclock.Option {
	var key grpclock.Option
	if m.Metadata != "" {
		key = grpclock.Key(grpclock.Const(m.Prefix), grpclock.Metadata(m.Metadata))
	} else {
		key = grpclock.Key(grpclock.Const(m.Prefix), grpclock.Field(m.Field))
	}
	opts := []grpclock.Option{key,
		grpclock.Wait(m.Wait), grpclock.MaxHold(m.MaxHold), grpclock.Limit(m.Limit), grpclock.AcquireOptions(m.AcquireOptions...)}
	if m.NoWait {
		opts = append(opts, grpclock.NoWait())
	}
	if m.FailOpen {
		opts = append(opts, grpclock.FailOpen())
	}
	switch m.RW {
	case conformance.RWRead:
		opts = append(opts, grpclock.ReadSide())
	case conformance.RWWrite:
		opts = append(opts, grpclock.WriteSide())
	}
	if f := m.ReleaseError; f != nil {
		opts = append(opts, grpclock.OnReleaseError(func(_ context.Context, _ string, err error) { f(err) }))
	}
	if m.Stream || m.SendHandler != nil {
		opts = append(opts, grpclock.FromFirstMessage())
	}
	if m.Idempotency != nil {
		opts = append(opts, grpclock.Idempotent(grpcIdempotency(m)...))
	}
	if m.NilResponders {
		opts = append(opts, customThenNil(grpclock.Responder(func(context.Context, *grpclock.Rejection) error { return status.Error(codes.DataLoss, "custom") }),
			grpclock.OnContended, grpclock.OnLimited, grpclock.OnUnavailable, grpclock.OnBadKey, grpclock.OnMisconfigured, grpclock.OnClientGone, grpclock.OnLost)...)
	}
	return opts
}

// grpcIdempotency are m's grpclock idempotency options.
func grpcIdempotency(m conformance.Method) []grpclock.IdempotencyOption {
	x := m.Idempotency
	opts := []grpclock.IdempotencyOption{grpclock.IdempotencyWait(x.Wait)}
	if x.Required {
		opts = append(opts, grpclock.IdempotencyRequired())
	}
	if x.Scope != "" {
		opts = append(opts, grpclock.IdempotencyScope(grpclock.Metadata(x.Scope)))
	}
	return opts
}

func serveGRPC(t testing.TB, client *core.Client, methods ...conformance.Method) conformance.Caller {
	unary, stream := map[string]grpc.UnaryServerInterceptor{}, map[string]grpc.StreamServerInterceptor{}
	desc := grpc.ServiceDesc{ServiceName: suiteService, HandlerType: (*any)(nil)}
	for _, m := range methods {
		if m.SendHandler != nil {
			stream[procedure(m.Name)] = grpclock.StreamServerInterceptor(client, grpcOptions(m)...)
			desc.Streams = append(desc.Streams, grpc.StreamDesc{StreamName: m.Name, ServerStreams: true, Handler: grpcServerStream(m)})
			continue
		}
		if m.Stream {
			stream[procedure(m.Name)] = grpclock.StreamServerInterceptor(client, grpcOptions(m)...)
			desc.Streams = append(desc.Streams, grpc.StreamDesc{StreamName: m.Name, ClientStreams: true, Handler: grpcStream(m)})
			continue
		}
		if m.Idempotency != nil && m.Idempotency.NoLock {
			unary[procedure(m.Name)] = grpclock.IdempotentUnaryServerInterceptor(client, grpcIdempotency(m)...)
		} else {
			unary[procedure(m.Name)] = grpclock.UnaryServerInterceptor(client, grpcOptions(m)...)
		}
		desc.Methods = append(desc.Methods, grpc.MethodDesc{MethodName: m.Name, Handler: grpcUnary(m)})
	}
	s := grpc.NewServer(
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return unary[info.FullMethod](ctx, req, info, h)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return stream[info.FullMethod](srv, ss, info, h)
		}))
	s.RegisterService(&desc, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-served
	})
	return grpcCaller{conn}
}

func grpcUnary(m conformance.Method) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) {
			if m.Answer != nil {
				claim, _ := core.ClaimFromContext(ctx)
				v, err := m.Answer(ctx, req.(*wrapperspb.StringValue).GetValue(), claim)
				if err != nil {
					return nil, err
				}
				_ = grpc.SetHeader(ctx, metadata.Pairs("location", "/answers/"+v, "x-answer", v))
				return wrapperspb.String(v), nil
			}
			l, ok := core.LeaseFromContext(ctx)
			if err := m.Handler(ctx, req.(*wrapperspb.StringValue).GetValue(), l, ok); err != nil {
				return nil, err
			}
			return &emptypb.Empty{}, nil
		}
		return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: procedure(m.Name)}, h)
	}
}

func grpcStream(m conformance.Method) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		recv := func() (string, error) {
			in := new(wrapperspb.StringValue)
			err := ss.RecvMsg(in)
			return in.GetValue(), err
		}
		if err := m.StreamHandler(ss.Context(), recv); err != nil {
			return err
		}
		return ss.SendMsg(&emptypb.Empty{})
	}
}

func grpcServerStream(m conformance.Method) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		in := new(wrapperspb.StringValue)
		if err := ss.RecvMsg(in); err != nil {
			return err
		}
		return m.SendHandler(ss.Context(), in.GetValue(), func(s string) error { return ss.SendMsg(wrapperspb.String(s)) })
	}
}

type grpcCaller struct{ conn *grpc.ClientConn }

func (c grpcCaller) Watch(ctx context.Context, name, id string) error {
	cs, err := c.conn.NewStream(ctx, &grpc.StreamDesc{StreamName: name, ServerStreams: true}, procedure(name))
	if err != nil {
		return err
	}
	if err := cs.SendMsg(wrapperspb.String(id)); err != nil {
		return err
	}
	return cs.CloseSend()
}

func (c grpcCaller) Call(ctx context.Context, name, id string, md ...string) conformance.Reply {
	for i := 0; i+1 < len(md); i += 2 {
		v := md[i+1]
		if strings.HasSuffix(strings.ToLower(md[i]), "-bin") { // grpc-go sends the bytes base64-encoded
			b, err := rpckey.BinaryValue(v)
			if err != nil {
				return conformance.Reply{Err: err}
			}
			v = b
		}
		ctx = metadata.AppendToOutgoingContext(ctx, md[i], v)
	}
	var header, trailer metadata.MD
	out := new(wrapperspb.StringValue) // an Empty answer reads as ""
	err := c.conn.Invoke(ctx, procedure(name), wrapperspb.String(id), out, grpc.Header(&header), grpc.Trailer(&trailer))
	r := grpcReply(err, trailer)
	if err == nil {
		r.Value = out.GetValue()
		first := func(k string) string {
			if v := header.Get(k); len(v) > 0 {
				return v[0]
			}
			return ""
		}
		r.Replayed, r.Location, r.XAnswer = first(rpckey.MetadataIdempotentReplayed) == "true", first("location"), first("x-answer")
	}
	return r
}

func (c grpcCaller) Stream(ctx context.Context, name string) (conformance.ClientStream, error) {
	s := &grpcClientStream{}
	cs, err := c.conn.NewStream(ctx, &grpc.StreamDesc{StreamName: name, ClientStreams: true}, procedure(name), grpc.Trailer(&s.trailer))
	s.cs = cs
	return s, err
}

type grpcClientStream struct {
	cs      grpc.ClientStream
	trailer metadata.MD
}

func (s *grpcClientStream) Send(id string) error { return s.cs.SendMsg(wrapperspb.String(id)) }

func (s *grpcClientStream) CloseAndReceive() conformance.Reply {
	err := s.cs.CloseSend()
	if err == nil {
		err = s.cs.RecvMsg(new(emptypb.Empty))
	}
	return grpcReply(err, s.trailer)
}

// grpcReply is what a grpc-go client got.
func grpcReply(err error, trailer metadata.MD) conformance.Reply {
	if err == nil {
		return conformance.Reply{}
	}
	st, ok := status.FromError(err)
	if !ok {
		return conformance.Reply{Err: err}
	}
	r := conformance.Reply{Code: guard.Code(st.Code()), Message: st.Message()}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			r.RetryDelay, r.HasRetry = ri.GetRetryDelay().AsDuration(), true
		}
	}
	if v := trailer.Get(guard.PushbackTrailer); len(v) > 0 {
		r.Pushback = v[0]
	}
	return r
}
