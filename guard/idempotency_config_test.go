package guard_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

type idemOpt = guard.IdempotencyOption[req]

func TestIdempotencyConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []idemOpt
		err  string // "" valid
	}{
		{"defaults", nil, ""},
		{"everything", []idemOpt{guard.IdempotencyHeader[req]("X-Key"), guard.IdempotencyRequired[req](), guard.IdempotencyMethods[req]("PUT"),
			guard.IdempotencyScope(guard.Header[req](mapReader{}, "X-Tenant")), guard.IdempotencyMaxBody[req](10), guard.IdempotencyMaxAnswer[req](10),
			guard.IdempotencyRetention[req](time.Hour), guard.IdempotencyStoreEveryAnswer[req](), guard.IdempotencyReplayHeaders[req]("X-Order-Id", "content-encoding"),
			guard.IdempotencyWait[req](time.Second)}, ""},
		{"header not a name", []idemOpt{guard.IdempotencyHeader[req]("Idempotency Key")}, "not a header name"},
		{"no method", []idemOpt{guard.IdempotencyMethods[req]()}, "without a method"},
		{"bad method", []idemOpt{guard.IdempotencyMethods[req]("PO ST")}, "not a method"},
		{"zero scope part", []idemOpt{guard.IdempotencyScope(guard.Part[req]{})}, "scope part 1"},
		{"negative MaxBody", []idemOpt{guard.IdempotencyMaxBody[req](-1)}, "MaxBody"},
		{"huge MaxBody", []idemOpt{guard.IdempotencyMaxBody[req](guard.MaxIdempotencyBody + 1)}, "MaxBody"},
		{"negative MaxAnswer", []idemOpt{guard.IdempotencyMaxAnswer[req](-1)}, "MaxAnswer"},
		{"MaxAnswer over what a record stores", []idemOpt{guard.IdempotencyMaxAnswer[req](core.MaxPayload + 1)}, "core.MaxPayload"},
		{"negative Retention", []idemOpt{guard.IdempotencyRetention[req](-time.Second)}, "Retention"},
		{"tiny Retention", []idemOpt{guard.IdempotencyRetention[req](time.Millisecond)}, "Retention"},
		{"negative Wait", []idemOpt{guard.IdempotencyWait[req](-time.Second)}, "Wait"},
		{"replay header not a name", []idemOpt{guard.IdempotencyReplayHeaders[req]("a b")}, "not a header name"},
	} {
		_, err := guard.NewIdempotency(mapReader{}, tc.opts...)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (!errors.Is(err, core.ErrInvalidOption) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want ErrInvalidOption mentioning %q", tc.name, err, tc.err)
		}
	}
	// A header that must never be replayed cannot be configured, in any
	// spelling.
	for _, name := range []string{"Set-Cookie", "set-cookie", "Date", "Content-Length", "Connection", "Keep-Alive", "Proxy-Authorization",
		"Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade", "traceparent", "Tracestate", "baggage", "b3", "X-B3-TraceId",
		"x-b3-spanid", "X-Request-Id", "Idempotent-Replayed"} {
		if _, err := guard.NewIdempotency(mapReader{}, guard.IdempotencyReplayHeaders[req](name)); !errors.Is(err, core.ErrInvalidOption) || !strings.Contains(err.Error(), "never replayed") {
			t.Errorf("ReplayHeaders(%s): %v", name, err)
		}
	}
	if _, err := guard.NewIdempotency[req](nil); !errors.Is(err, core.ErrInvalidOption) {
		t.Errorf("no reader: %v", err)
	}
	x, _ := guard.NewIdempotency[req](mapReader{})
	c := x.Config()
	if c.Header != guard.DefaultIdempotencyHeader || c.MaxBody != guard.DefaultMaxBody || c.MaxAnswer != guard.DefaultMaxAnswer || c.Retention != guard.DefaultRetention || c.Wait != 0 || c.Required || c.StoreEveryAnswer {
		t.Errorf("defaults: %+v", c)
	}
	if !x.Applies(http.MethodPost) || !x.Applies(http.MethodPatch) {
		t.Error("POST and PATCH are not idempotent by default")
	}
}
