package rpckey_test

import (
	"strings"
	"testing"

	"github.com/lockkit/lockkit/guard/rpckey"
)

// An adapter that gives no Wire is refused at construction, not on the
// first refused call (a nil default answer).
func TestNewNeedsAWire(t *testing.T) {
	_, err := rpckey.New(rpckey.Config[int]{})
	if err == nil || !strings.Contains(err.Error(), "Wire") {
		t.Fatalf("New without a Wire: %v, want an error naming the Wire", err)
	}
}
