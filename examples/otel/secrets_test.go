package main

import (
	"testing"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
)

// The otel example, run as a process, refuses a REDIS_URL it cannot use
// without printing the password in it, however it is spelled (its spans
// and metrics go to its stdout, which is checked too).
func TestMainHidesSecrets(t *testing.T) { exampletest.MainHidesSecrets(t) }
