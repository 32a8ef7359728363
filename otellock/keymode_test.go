package otellock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/codes"
)

// lockkit.lock.key follows WithKeyAttribute on both spans; status
// descriptions carry the raw key only in KeyRaw mode.
func TestKeyAttributeModes(t *testing.T) {
	const key = "account:alice@example.com"
	cases := []struct {
		name string
		opts []otellock.Option
		want string // "" = no attribute
	}{
		{"default is hashed", nil, otellock.HashKey(key)},
		{"hashed", []otellock.Option{otellock.WithKeyAttribute(otellock.KeyHashed)}, otellock.HashKey(key)},
		{"raw", []otellock.Option{otellock.WithKeyAttribute(otellock.KeyRaw)}, key},
		{"omit", []otellock.Option{otellock.WithKeyAttribute(otellock.KeyOmit)}, ""},
	}
	srv := redistest.Start(t)
	holder := newClient(t, srv)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t, tc.opts...)
			c := newClient(t, srv, core.WithObserver(tel.obs))
			ctx := testkit.Context(t, 20*time.Second)
			l, err := c.Acquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// A refused acquire: its status description must not leak the key.
			hl, err := holder.Acquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = c.Acquire(ctx, key, core.NoWait())
			_ = hl.Release(ctx)

			spans := append(tel.ended(otellock.SpanAcquire), tel.ended(otellock.SpanHold)...)
			if len(spans) != 3 {
				t.Fatalf("%d spans", len(spans))
			}
			for _, s := range spans {
				v, ok := attrOf(s.Attributes(), otellock.AttrKey)
				switch {
				case tc.want == "" && ok:
					t.Errorf("%s has key %q, want none", s.Name(), v.AsString())
				case tc.want != "" && v.AsString() != tc.want:
					t.Errorf("%s key = %q, want %q", s.Name(), v.AsString(), tc.want)
				}
				if s.Status().Code == codes.Error {
					if leaked := strings.Contains(s.Status().Description, "alice"); leaked != (tc.want == key) {
						t.Errorf("%s status %q: key shown = %v in mode %s", s.Name(), s.Status().Description, leaked, tc.name)
					}
				}
			}
		})
	}
	if h := otellock.HashKey(key); len(h) != 16 || h == otellock.HashKey("account:bob") {
		t.Fatalf("HashKey = %q", h)
	}
}
