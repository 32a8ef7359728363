package core_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/core"
)

func TestJoinKey(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{[]string{"order", "42"}, "order:42"},
		{[]string{"a:b", "c"}, `a\:b:c`},
		{[]string{"a", "b:c"}, `a:b\:c`},
		{[]string{`a\`, "b"}, `a\\:b`},
		{[]string{"{x}", "ü"}, "{x}:ü"},
	} {
		if got, err := core.JoinKey(tc.parts...); err != nil || got != tc.want {
			t.Errorf("JoinKey(%q) = %q, %v; want %q", tc.parts, got, err, tc.want)
		}
	}
	for _, parts := range [][]string{nil, {""}, {"order", ""}} {
		var kpe *core.KeyPartError
		if _, err := core.JoinKey(parts...); !errors.Is(err, core.ErrInvalidKey) || (len(parts) > 0 && !errors.As(err, &kpe)) {
			t.Errorf("JoinKey(%q) = %v, want ErrInvalidKey", parts, err)
		}
	}
}

// Different part lists never give the same key: escaping is injective.
func FuzzJoinKeyInjective(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c")
	f.Add(`a\`, ":b", `a\:`, "b")
	f.Add("x", `\:`, `x:\`, ":")
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string) {
		ka, errA := core.JoinKey(a1, a2)
		kb, errB := core.JoinKey(b1, b2)
		if errA != nil || errB != nil {
			return
		}
		if ka == kb && (a1 != b1 || a2 != b2) {
			t.Fatalf("%q and %q both give %q", []string{a1, a2}, []string{b1, b2}, ka)
		}
		if got := splitKey(ka); len(got) != 2 || got[0] != a1 || got[1] != a2 {
			t.Fatalf("%q splits back into %q, not %q", ka, got, []string{a1, a2})
		}
	})
}

// splitKey undoes JoinKey: split at unescaped ':' and drop the escapes.
func splitKey(k string) []string {
	var parts []string
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '\\' && i+1 < len(k):
			i++
			b.WriteByte(k[i])
		case c == ':':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(parts, b.String())
}
