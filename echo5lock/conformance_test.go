package echo5lock_test

import (
	"testing"

	"github.com/lockkit/lockkit/internal/keyspec/conformance"
)

// The behaviour every HTTP adapter shares (issue 3's list), on echo v5.
func TestConformance(t *testing.T) { conformance.Run(t, conformance.Echo5) }
