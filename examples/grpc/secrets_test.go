package main

import (
	"testing"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
)

// The gRPC example refuses a REDIS_URL go-redis cannot use without printing
// the password in it, however it is spelled.
func TestRunHidesSecrets(t *testing.T) { exampletest.RefusesSecretURLs(t, run) }
