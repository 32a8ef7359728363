package exampletest

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Secret is the password SecretURLs carry.
const Secret = "hunTeRZk2"

// SecretURLs are Redis URLs that carry Secret, spelled as go-redis reads
// it (percent-encoded in a parameter's name or value, in the userinfo, in
// a Sentinel URL's parameters, in either case), each of which an example
// refuses after go-redis has read the password: a bad parameter after
// it, an empty addr=, an unknown option, an '@' where the userinfo cannot
// end. package embedded's tests spell secrets exhaustively; these check
// what an example prints.
var SecretURLs = []string{
	"redis://127.0.0.1:1/0?master_name=m&%70assword=" + Secret + "&addr=",
	"redis://127.0.0.1:1/0?%70assword=X" + Secret + "&dial_timeout=zz",
	"redis://alice:%68unTeRZk2@127.0.0.1:1/0?dial_timeout=zz",
	"redis://127.0.0.1:1?master_name=m&Sentinel_%50assword=h%75nTeRZk2&nope=1",
	"redis://127.0.0.1:1?master_name=m&password=" + Secret + "@x&dial_timeout=zz",
	"redis://u:12#" + Secret + "@127.0.0.1:1",
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

// RefusesSecretURLs checks that run, given each of SecretURLs as
// REDIS_URL, fails without Secret in its error or its output.
func RefusesSecretURLs(t *testing.T, run RunFunc) {
	for _, url := range SecretURLs {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var out bytes.Buffer
		err := run(ctx, []string{"-addr", "127.0.0.1:0"}, func(k string) string { return map[string]string{"REDIS_URL": url}[k] }, &out)
		cancel()
		if err == nil {
			t.Errorf("REDIS_URL=%s: run succeeded", url)
			continue
		}
		if ShowsSecret(err.Error(), Secret) || ShowsSecret(out.String(), Secret) {
			t.Errorf("REDIS_URL=%s: the password is shown:\nerror: %v\noutput: %s", url, err, out.String())
		}
	}
}
