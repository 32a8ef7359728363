package conformance_test

import (
	"testing"

	"github.com/lockkit/lockkit/internal/keyspec/conformance"
)

// Two frameworks serving the same resource (order:<id>) exclude each other:
// replica A on one framework, replica B on another, one Redis.
func TestCrossFramework(t *testing.T) {
	for _, pair := range [][2]conformance.Adapter{
		{conformance.Gin, conformance.Echo},
		{conformance.Gin, conformance.Echo5},
		{conformance.Echo, conformance.Echo5},
		{conformance.Stdlib, conformance.Gin},
		{conformance.Chi, conformance.Echo},
		{conformance.Stdlib, conformance.Echo5},
	} {
		conformance.RunPair(t, pair[0], pair[1])
	}
}
