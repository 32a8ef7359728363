package connectlock_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The behaviour every RPC adapter shares, on connect-go.
func TestConformance(t *testing.T) { conformance.RunRPC(t, builders.Connect) }

// Idempotency's rule on connect-go.
func TestIdempotencyConformance(t *testing.T) { conformance.RunRPCIdempotency(t, builders.Connect) }
