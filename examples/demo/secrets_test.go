package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/exampletest"
)

// The demo refuses a REDIS_URL go-redis cannot use without printing the
// password in it, however it is spelled.
func TestRunHidesSecrets(t *testing.T) {
	for _, url := range exampletest.SecretURLs {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var out, errOut bytes.Buffer
		code := run(ctx, []string{"-duration", "1s"}, func(k string) string { return map[string]string{embedded.EnvURL: url}[k] }, &out, &errOut)
		cancel()
		if code != exitError {
			t.Errorf("REDIS_URL=%s: exit status %d, want %d", url, code, exitError)
		}
		if s := out.String() + errOut.String(); exampletest.ShowsSecret(s, exampletest.Secret) {
			t.Errorf("REDIS_URL=%s: the password is shown:\n%s", url, s)
		}
	}
}
