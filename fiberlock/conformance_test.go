package fiberlock_test

import (
	"testing"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The behaviour every HTTP adapter shares, on fiber's own listener.
func TestConformance(t *testing.T) { conformance.Run(t, builders.Fiber) }

// Any valid percent-encoding of an id gives the key of the id, decoded to
// its end, whether fiber unescapes path parameters or not.
func FuzzCanonicalKey(f *testing.F) { conformance.FuzzCanonicalKey(f, builders.Fiber) }

// A hostile client's distinct methods, paths and keys leave no trace.
func TestFlood(t *testing.T) { conformance.Flood(t, builders.Fiber, nil) }
