package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
)

// TestMain is the program itself when MainHidesSecrets runs it.
func TestMain(m *testing.M) {
	exampletest.AsMain(main)
	goleak.VerifyTestMain(m)
}

// The example on a real Redis (REDIS_URL) and on its embedded miniredis:
// see exampletest.Command.
func TestCommand(t *testing.T) { exampletest.Command(t, command.Run) }
