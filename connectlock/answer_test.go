package connectlock_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lockkit/lockkit/connectlock"
	"github.com/lockkit/lockkit/guard"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// A responder's error with two RetryInfo details gets one pushback entry,
// from the first detail: what a client reading the detail takes, as
// grpclock sends it.
func TestUnaryResponderPushbackIsFirstRetryInfo(t *testing.T) {
	c := testkit.Client(t, redistest.Start(t).NewClient())
	lock := connectlock.UnaryInterceptor(c, connectlock.Key(connectlock.Const("order"), connectlock.Metadata("x-order")),
		connectlock.OnBadKey(func(ctx context.Context, r *connectlock.Rejection) error {
			e := connect.NewError(connect.CodeInvalidArgument, errors.New("no order"))
			for _, d := range []time.Duration{2 * time.Second, 5 * time.Second} {
				det, err := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
				if err != nil {
					t.Error(err)
				}
				e.AddDetail(det)
			}
			return e
		}))
	const proc = "/t.v1.T/Pay"
	ok := func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
		return connect.NewResponse(&emptypb.Empty{}), nil
	}
	mux := http.NewServeMux()
	mux.Handle(proc, connect.NewUnaryHandler(proc, ok, connect.WithInterceptors(lock)))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	t.Cleanup(hs.Client().CloseIdleConnections)
	_, err := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](hs.Client(), hs.URL+proc).
		CallUnary(testkit.Context(t, 20*time.Second), connect.NewRequest(wrapperspb.String("1")))
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument || len(ce.Details()) != 2 {
		t.Fatalf("error %v, want the responder's, with its two details", err)
	}
	if got := ce.Meta().Values(guard.PushbackTrailer); len(got) != 1 || got[0] != "2000" {
		t.Fatalf("%s = %q, want [\"2000\"] (the first RetryInfo)", guard.PushbackTrailer, got)
	}
}
