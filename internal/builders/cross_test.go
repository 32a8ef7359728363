package builders_test

import (
	"testing"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// Two frameworks serving the same resource (order:<id>) exclude each other:
// replica A on one framework, replica B on another, one Redis.
func TestCrossFramework(t *testing.T) {
	for _, pair := range [][2]conformance.Adapter{
		{builders.Gin, builders.Echo},
		{builders.Gin, builders.Echo5},
		{builders.Echo, builders.Echo5},
		{builders.Stdlib, builders.Gin},
		{builders.Chi, builders.Echo},
		{builders.Stdlib, builders.Echo5},
	} {
		conformance.RunPair(t, pair[0], pair[1])
	}
}

// gRPC and connect serving the same resource exclude each other, and
// answer every outcome alike.
func TestCrossProtocol(t *testing.T) {
	conformance.RunRPCPair(t, builders.GRPC, builders.Connect)
}
