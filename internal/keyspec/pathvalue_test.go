package keyspec_test

import (
	"errors"
	"testing"

	"github.com/lockkit/lockkit/internal/keyspec"
)

func TestPathValue(t *testing.T) {
	for _, tc := range []struct {
		in      string
		escaped bool
		want    string
		bad     bool
	}{
		{"42", false, "42", false},
		{"%34%32", true, "42", false},
		{"%c3%a9", true, "é", false},
		{"%C3%A9", true, "é", false},
		{"%2525", true, "%25", false}, // decoded once, never twice
		{"%25", false, "%25", false},  // already decoded: kept
		{"a%2Fb", true, "a/b", false},
		{"a%3Ab", true, "a:b", false},
		{"a%00b", true, "", true},
		{"a\x00b", false, "", true},
		{"a\x7fb", false, "", true},
		{"a\tb", false, "", true},
		{"%zz", true, "", true},
		{"ABC", false, "ABC", false}, // case is not normalised
	} {
		got, err := keyspec.PathValue(tc.in, tc.escaped)
		if tc.bad {
			if !errors.Is(err, keyspec.ErrPathValue) {
				t.Errorf("PathValue(%q, %v) = %q, %v; want ErrPathValue", tc.in, tc.escaped, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("PathValue(%q, %v) = %q, %v; want %q", tc.in, tc.escaped, got, err, tc.want)
		}
	}
}
