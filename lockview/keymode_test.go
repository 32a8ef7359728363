package lockview_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/lockkit/lockkit/lockview"
	"github.com/lockkit/lockkit/otellock"
)

// TestKeyModes: the same held lock, hot key and failed acquire, shown
// hashed (the default, otellock's hash), raw, or hidden; neither the JSON
// nor the page of a hashed or hidden view carries the key, errors included.
func TestKeyModes(t *testing.T) {
	const key = "account:alice@example.com"
	cases := []struct {
		name string
		opts []lockview.Option
		mode string
		want string // the key as shown
	}{
		{"default is hashed", nil, "hashed", otellock.HashKey(key)},
		{"hashed", []lockview.Option{lockview.WithKeys(lockview.KeyHashed)}, "hashed", core.HashKey(key)},
		{"raw", []lockview.Option{lockview.WithKeys(lockview.KeyRaw)}, "raw", key},
		{"hidden", []lockview.Option{lockview.WithKeys(lockview.KeyHidden)}, "hidden", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opts...)
			ctx := testkit.Context(t, 30*time.Second)
			l, err := r.c.Acquire(ctx, key, core.Name("POST /accounts/:id"))
			if err != nil {
				t.Fatal(err)
			}
			s := r.snapshot(t)
			if s.KeyMode != tc.mode {
				t.Errorf("key_mode %q, want %q", s.KeyMode, tc.mode)
			}
			if len(s.Locks) != 1 || s.Locks[0].Key != tc.want || s.Locks[0].Name != "POST /accounts/:id" {
				t.Errorf("locks %+v, want the one shown as %q", s.Locks, tc.want)
			}
			if len(s.HotKeys) != 1 || s.HotKeys[0].Key != tc.want {
				t.Errorf("hot keys %+v, want the one shown as %q", s.HotKeys, tc.want)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			r.srv.Kill()
			if _, err := r.c.Acquire(ctx, key, core.Wait(2*time.Second)); err == nil {
				t.Fatal("acquire with Redis dead succeeded")
			}
			s = r.snapshot(t)
			if len(s.Errors) == 0 || s.Errors[0].Key != tc.want {
				t.Fatalf("errors %+v, want one for the key shown as %q", s.Errors, tc.want)
			}
			_, page := r.get(t, http.MethodGet, "/debug/locks/")
			_, js := r.get(t, http.MethodGet, "/debug/locks/?format=json")
			for what, body := range map[string]string{"page": page, "json": js} {
				has := strings.Contains(body, "alice")
				if has != (tc.mode == "raw") {
					t.Errorf("%s contains the raw key: %v, want %v:\n%s", what, has, tc.mode == "raw", body)
				}
				if tc.want != "" && !strings.Contains(body, tc.want) {
					t.Errorf("%s lacks the key as shown, %q", what, tc.want)
				}
			}
			if tc.mode == "raw" && !strings.Contains(s.Errors[0].Error, key) {
				t.Errorf("raw error text %q lacks the key", s.Errors[0].Error)
			}
		})
	}
}
