package builders_test

import (
	"testing"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Two frameworks serving the same resource (order:<id>) exclude each other,
// spell one cookie or one id into one key and answer every outcome alike:
// replica A on one framework, replica B on another, one Redis. Every pair of
// the six frameworks runs, since any two may serve one resource side by side
// (fiber's on fasthttp, on its own listener).
func TestCrossFramework(t *testing.T) {
	frameworks := []conformance.Adapter{builders.Stdlib, builders.Chi, builders.Gin, builders.Echo, builders.Echo5, builders.Fiber}
	for i, a := range frameworks {
		for _, b := range frameworks[i+1:] {
			conformance.RunPair(t, a, b)
		}
	}
}

// gRPC and connect serving the same resource exclude each other, and
// answer every outcome alike.
func TestCrossProtocol(t *testing.T) {
	conformance.RunRPCPair(t, builders.GRPC, builders.Connect)
}

// A retry that reaches the other protocol gets the same answer.
func TestCrossProtocolIdempotency(t *testing.T) {
	conformance.RunRPCIdempotencyPair(t, builders.GRPC, builders.Connect)
	conformance.RunRPCIdempotencyPair(t, builders.Connect, builders.GRPC)
}
