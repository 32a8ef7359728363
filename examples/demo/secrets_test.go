package main

import (
	"testing"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
)

// The demo, run as a process, refuses a REDIS_URL it cannot use without
// printing the password in it, however it is spelled.
func TestMainHidesSecrets(t *testing.T) { exampletest.MainHidesSecrets(t, "-duration", "1s") }
