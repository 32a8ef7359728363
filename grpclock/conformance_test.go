package grpclock_test

import (
	"testing"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The behaviour every RPC adapter shares, on grpc-go.
func TestConformance(t *testing.T) { conformance.RunRPC(t, builders.GRPC) }

// Idempotency's rule on grpc-go.
func TestIdempotencyConformance(t *testing.T) { conformance.RunRPCIdempotency(t, builders.GRPC) }
