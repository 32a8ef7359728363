package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The example on a real Redis (REDIS_URL) and on its embedded miniredis:
// see exampletest.Command.
func TestCommand(t *testing.T) { exampletest.Command(t, command.Run) }
