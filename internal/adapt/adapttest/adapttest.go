// Package adapttest runs the option cases every lockkit adapter shares
// (adapt.OptionCases) through one adapter's constructor, so each adapter's
// test is one call and the cases are written once.
package adapttest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/internal/adapt"
)

// RunOptionCases builds the adapter once per case with build, which returns
// what construction said: nil when it succeeded, else its error (or its
// panic, through Panic). A refused case must be refused with a message
// that starts with prefix (e.g. "ginlock: New: ") and names the rule.
func RunOptionCases(t *testing.T, prefix string, build func(tc adapt.OptionCase) error) {
	t.Helper()
	for _, tc := range adapt.OptionCases {
		t.Run(tc.Name, func(t *testing.T) {
			err := build(tc)
			switch {
			case tc.Err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.Err != "" && err == nil:
				t.Fatalf("accepted, want refused saying %q", tc.Err)
			case tc.Err != "" && (!strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.Err)):
				t.Fatalf("refused with %q, want %q...%q", err, prefix, tc.Err)
			}
		})
	}
}

// Panic runs f and returns its panic as an error (nil when it returned).
func Panic(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}
