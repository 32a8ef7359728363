package keyspec_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/internal/keyspec"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []keyspec.Spec
		err  string
	}{
		{in: "const:order,param:id", want: []keyspec.Spec{{keyspec.Const, "order"}, {keyspec.Param, "id"}}},
		{in: " const:order , Header:X-Tenant ,query:q,cookie:s", want: []keyspec.Spec{
			{keyspec.Const, "order"}, {keyspec.Header, "X-Tenant"}, {keyspec.Query, "q"}, {keyspec.Cookie, "s"}}},
		{in: "const:a:b", want: []keyspec.Spec{{keyspec.Const, "a:b"}}},
		{in: "", err: "empty"},
		{in: "  ", err: "empty"},
		{in: "order", err: "not source:name"},
		{in: "const:order,", err: "not source:name"},
		{in: "form:id", err: "unknown source"},
		{in: "param:", err: "empty name"},
		{in: "const:order,header: ", err: "empty name"},
	} {
		got, err := keyspec.Parse(tc.in)
		switch {
		case tc.err != "":
			if !errors.Is(err, keyspec.ErrSyntax) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) error = %v, want ErrSyntax mentioning %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("Parse(%q): %v", tc.in, err)
		case !reflect.DeepEqual(got, tc.want):
			t.Errorf("Parse(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestMustParsePanicsWithPackageName(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "echolock: ") {
			t.Fatalf("recover() = %v", r)
		}
	}()
	keyspec.MustParse("echolock", "bogus")
}

// Parse never panics, and what it accepts prints back to a spec that
// parses to the same parts.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"const:order,param:id", "header:X-Tenant", "const:a:b,query:q", ",", ":", "const:,", "param:id,,", "CONST: x "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		specs, err := keyspec.Parse(s)
		if err != nil {
			return
		}
		parts := make([]string, len(specs))
		for i, sp := range specs {
			parts[i] = sp.String()
		}
		again, err := keyspec.Parse(strings.Join(parts, ","))
		if err != nil || !reflect.DeepEqual(again, specs) {
			t.Fatalf("Parse(%q) = %v; printed and parsed again: %v, %v", s, specs, again, err)
		}
	})
}
