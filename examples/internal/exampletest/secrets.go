package exampletest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Secret is the password SecretURLs carry.
const Secret = "hunTeRZk2"

// SecretURLs are Redis URLs that carry Secret, each of which an example
// refuses: spelled as a newcomer writes a password (without the '@host'
// after it, without an '@' at all, in a parameter), as go-redis reads it
// (percent-encoded in the userinfo or in a parameter's name or value, in
// any case), with characters a URL must encode left raw, in URLs that do
// not parse, and in URLs that parse and name a server that is not there
// (nothing listens on port 1). None names go-redis's default of
// localhost:6379, which a URL without a host would reach (and which may be
// someone's Redis): "redis://:<password>@" is spelled with a database that
// is not a number after it. package embedded's tests spell secrets
// exhaustively; these check what an example prints.
var SecretURLs = []string{
	// A password without its host, or without the '@' that ends it.
	"redis://:" + Secret,
	"redis://user:" + Secret,
	"rediss://:" + Secret,
	"unix://:" + Secret,
	"redis://:" + Secret + "/0",
	"redis://user:" + Secret + "?db=1",
	"redis://user:" + Secret + ":6379",
	"redis://%3A" + Secret,
	"redis://[::1]:" + Secret,
	"REDIS://:" + Secret,
	"redis-sentinel://:" + Secret,
	"redis:" + Secret,
	"redis:/:" + Secret + "@127.0.0.1:1",
	":" + Secret + "@127.0.0.1:1",
	Secret,
	// An '@' and no host: go-redis's default host, refused before it is
	// reached.
	"redis://:" + Secret + "@/x",
	"redis://user:" + Secret + "@?dial_timeout=zz",
	"unix://:" + Secret + "@/run/redis.sock?db=x",
	// The userinfo, on a server, a cluster or sentinels that are not there.
	"redis://:" + Secret + "@127.0.0.1:1",
	"redis://user:" + Secret + "@127.0.0.1:1/0",
	"rediss://:" + Secret + "@127.0.0.1:1/0",
	"redis://:" + Secret + "@127.0.0.1:1?cluster=true",
	"redis://u:" + Secret + "@127.0.0.1:1?addr=127.0.0.1:2",
	"redis://:" + Secret + "@127.0.0.1:1?master_name=m",
	// The userinfo in a URL go-redis refuses after reading it.
	"redis://alice:%68unTeRZk2@127.0.0.1:1/0?dial_timeout=zz",
	"redis://:%68%75%6E%54%65%52%5A%6B%32@127.0.0.1:1/x",
	"rediss://user:" + Secret + "@127.0.0.1:1?skip_verify=maybe",
	"redis://:" + Secret + "@127.0.0.1:port",
	"redis://:" + Secret + "@[::1",
	"http://:" + Secret + "@127.0.0.1:1",
	// Characters a password must have encoded, left raw: the parser then
	// reads a piece of the password as the host, path, query or fragment.
	"redis://:" + Secret + "/x@127.0.0.1:1",
	"redis://:" + Secret + "?x@127.0.0.1:1",
	"redis://:" + Secret + "@x@127.0.0.1:1",
	"redis://u:12#" + Secret + "@127.0.0.1:1",
	"redis://:" + Secret + " x@127.0.0.1:1",
	"redis://:" + Secret + "%zz@127.0.0.1:1",
	"redis://:" + Secret + "\n@127.0.0.1:1",
	// A password in a parameter: go-redis takes the master's from a
	// Sentinel URL's password=, and refuses it as an unknown option (in an
	// error that quotes the URL) anywhere else.
	"redis://127.0.0.1:1?password=" + Secret,
	"redis://127.0.0.1:1?PASSWORD=" + Secret + "#frag",
	"redis://127.0.0.1:1/0?db=1;password=" + Secret,
	"redis://127.0.0.1:1/0?%70assword=X" + Secret + "&dial_timeout=zz",
	"redis://127.0.0.1:1/0?master_name=m&%70assword=" + Secret + "&addr=",
	"redis://127.0.0.1:1?master_name=m&Sentinel_%50assword=h%75nTeRZk2&nope=1",
	"redis://127.0.0.1:1?master_name=m&password=" + Secret + "@x&dial_timeout=zz",
	"redis://127.0.0.1:1?master_name=m&password=" + Secret,
}

// ShowsSecret says whether text shows secret in any spelling: as it is, or
// once every percent-escape in it is decoded (again while that changes
// it), in any case.
func ShowsSecret(text, secret string) bool {
	low := strings.ToLower(secret)
	return strings.Contains(strings.ToLower(text), low) || strings.Contains(strings.ToLower(decodeAll(text)), low)
}

// decodeAll decodes every valid percent-escape of s, again while that
// changes s (written apart from the redaction it checks, as a witness).
func decodeAll(s string) string {
	for range 5 {
		d := escape.ReplaceAllStringFunc(s, func(e string) string {
			b, _ := strconv.ParseUint(e[1:], 16, 8)
			return string([]byte{byte(b)})
		})
		if d == s {
			break
		}
		s = d
	}
	return s
}

var escape = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

// mainEnv, set in a test binary's environment, makes AsMain run the
// program's main in place of the tests.
const mainEnv = "LOCKKIT_EXAMPLE_RUN_MAIN"

// AsMain runs main and exits when MainHidesSecrets started the test binary
// as the program itself, and returns at once otherwise: a program's
// TestMain calls it first, so that its test binary is the program, with
// its flags, its output and its exit status, run as a process.
func AsMain(main func()) {
	if os.Getenv(mainEnv) != "1" {
		return
	}
	main()
	os.Exit(0)
}

// MainHidesSecrets runs the program whose TestMain calls AsMain, as a
// child process, with each of SecretURLs as REDIS_URL and args as its
// arguments, and checks that it exits with a failure that names REDIS_URL
// (the URL was judged, not some other fault) and that nothing it
// wrote to stdout or stderr shows Secret in any spelling. The child has no
// ADDR and no OTEL_ variable (telemetry goes to its stdout, where it is
// checked too).
func MainHidesSecrets(t *testing.T, args ...string) {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "REDIS_URL" && name != "ADDR" && name != mainEnv && !strings.HasPrefix(name, "OTEL_") {
			env = append(env, kv)
		}
	}
	for _, url := range SecretURLs {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(env, mainEnv+"=1", "REDIS_URL="+url)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.WaitDelay = 5 * time.Second
		err := cmd.Run()
		timedOut := ctx.Err() != nil
		cancel()
		var exit *exec.ExitError
		switch {
		case err == nil:
			t.Errorf("REDIS_URL=%q: the program exited 0:\n%s", url, out.String())
		case !errors.As(err, &exit) || timedOut:
			t.Errorf("REDIS_URL=%q: %v:\n%s", url, err, out.String())
		case !strings.Contains(out.String(), "REDIS_URL"):
			// Refused for another reason: the URL was not judged.
			t.Errorf("REDIS_URL=%q: the error does not name REDIS_URL:\n%s", url, out.String())
		}
		if ShowsSecret(out.String(), Secret) {
			t.Errorf("REDIS_URL=%q: the password is shown:\n%s", url, out.String())
		}
	}
}
