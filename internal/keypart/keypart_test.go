package keypart_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/keypart"
)

// A part the server configured wrongly is ErrKeyConfig (500), not the
// caller's ErrInvalidKey (400); a missing value is the caller's.
func TestBuildTellsServerFromCallerMistakes(t *testing.T) {
	type req map[string]string
	get := func(name string) keypart.Part[req] {
		return keypart.Part[req]{Source: "field", Name: name, Get: func(r req) (string, error) {
			v, ok := r[name]
			if !ok {
				return "", errors.Join(core.ErrKeyConfig, errors.New("no such field"))
			}
			return v, nil
		}}
	}
	r := req{"id": "42", "empty": "", "colon": "a:b"}
	if k, err := keypart.Build(r, []keypart.Part[req]{keypart.Const[req]("order"), get("id")}); err != nil || k != "order:42" {
		t.Fatalf("Build = %q, %v", k, err)
	}
	if k, err := keypart.Build(r, []keypart.Part[req]{keypart.Const[req]("order"), get("colon")}); err != nil || k != `order:a\:b` {
		t.Fatalf("Build with a ':' in a value = %q, %v; want it escaped as by core.JoinKey", k, err)
	}
	_, err := keypart.Build(r, []keypart.Part[req]{keypart.Const[req]("order"), get("empty")})
	var kpe *core.KeyPartError
	if !errors.Is(err, core.ErrInvalidKey) || errors.Is(err, core.ErrKeyConfig) || !errors.As(err, &kpe) || kpe.Index != 1 || kpe.Name != "empty" {
		t.Fatalf("empty part = %v, want a *core.KeyPartError naming it, ErrInvalidKey only", err)
	}
	_, err = keypart.Build(r, []keypart.Part[req]{keypart.Const[req]("order"), get("nope")})
	if errors.Is(err, core.ErrInvalidKey) || !errors.Is(err, core.ErrKeyConfig) || !strings.Contains(err.Error(), "misconfigured") {
		t.Fatalf("misconfigured part = %v, want ErrKeyConfig only", err)
	}
	if _, err := keypart.Build(r, []keypart.Part[req]{keypart.Const[req]("order"), {}}); errors.Is(err, core.ErrInvalidKey) || !errors.Is(err, core.ErrKeyConfig) {
		t.Fatalf("zero part = %v, want ErrKeyConfig only", err)
	}
	if _, err := keypart.Build(r, nil); !errors.Is(err, core.ErrInvalidKey) {
		t.Fatalf("no parts = %v, want ErrInvalidKey", err)
	}
}

func TestConstRefusesEmpty(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.Contains(r, "empty key part") {
			t.Fatalf("Const(\"\") panicked with %v", r)
		}
	}()
	keypart.Const[int]("")
}
