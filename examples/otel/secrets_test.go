package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
)

// The otel example refuses a REDIS_URL go-redis cannot use without printing
// the password in it, however it is spelled.
func TestRunHidesSecrets(t *testing.T) {
	noOTLP(t)
	for _, url := range exampletest.SecretURLs {
		t.Setenv("REDIS_URL", url)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out bytes.Buffer
		_, err := run(ctx, &out, &out)
		cancel()
		if err == nil {
			t.Errorf("REDIS_URL=%s: run succeeded", url)
			continue
		}
		if exampletest.ShowsSecret(err.Error()+out.String(), exampletest.Secret) {
			t.Errorf("REDIS_URL=%s: the password is shown: %v\n%s", url, err, out.String())
		}
	}
}
