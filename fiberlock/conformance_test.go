package fiberlock_test

import (
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/lockkit/lockkit/internal/builders"
	"github.com/lockkit/lockkit/testing/conformance"
)

// The behaviour every HTTP adapter shares, on fiber's own listener.
func TestConformance(t *testing.T) { conformance.Run(t, builders.Fiber) }

// Any valid percent-encoding of an id gives the key of the id, decoded to
// its end, whether fiber unescapes path parameters or not.
func FuzzCanonicalKey(f *testing.F) { conformance.FuzzCanonicalKey(f, builders.Fiber) }

// The same with fiber's UnescapePath, which hands path parameters over
// decoded.
func FuzzCanonicalKeyUnescaped(f *testing.F) {
	conformance.FuzzCanonicalKey(f, builders.FiberWith("fiber+UnescapePath", fiber.Config{UnescapePath: true}))
}

// With or without UnescapePath, one id in any spelling is one key, on fiber
// and beside gin.
func TestSpellingsUnescaped(t *testing.T) {
	conformance.SpellingsExclude(t, builders.FiberWith("fiber+UnescapePath", fiber.Config{UnescapePath: true}), builders.Gin)
	conformance.SpellingsExclude(t, builders.Gin, builders.FiberWith("fiber+UnescapePath", fiber.Config{UnescapePath: true}))
}

// A hostile client's distinct methods, paths and keys leave no trace.
func TestFlood(t *testing.T) { conformance.Flood(t, builders.Fiber, nil) }

// The idempotency options are accepted or refused as in every other HTTP
// adapter (conformance.IdempotencyCases).
func TestIdempotencyOptionCases(t *testing.T) {
	conformance.RunIdempotencyOptionCases(t, builders.Fiber, "fiberlock: Idempotent: ")
}
