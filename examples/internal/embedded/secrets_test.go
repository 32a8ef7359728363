package embedded_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/examples/internal/exampletest"
	"github.com/lockkit/lockkit/internal/redistest"
)

// The secrets the tests spell in URLs. Each is distinctive (nothing else in
// an error contains it) and has characters whose percent-encoding has a
// hex letter (Z is %5A or %5a), so that upper and lower hex both occur.
const (
	secretUser = "uSeRjO"  // a user name in the userinfo
	secretPass = "Pw0rdZk" // a password: in the userinfo, or a parameter's value
)

// structural are characters a secret may hold that a URL must carry
// percent-encoded: each spelling of a secret below ends with them, encoded.
const structural = "@/?#&:=%+ "

// spellings returns spellings of s as a URL carries it: every subset of
// its characters percent-encoded (2^len(s) of them), each once with lower
// and once with upper hex digits; the characters of suffix, if any, are
// appended always encoded. With caseFlips, the upper-hex spellings also
// have their unencoded letters' case flipped: a parameter name in another
// case, which go-redis refuses as an unknown option, in an error that
// quotes the URL.
func spellings(s, suffix string, caseFlips bool) []string {
	seen := map[string]bool{}
	var out []string
	for mask := range 1 << len(s) {
		for _, upper := range []bool{false, true} {
			var b strings.Builder
			for i := range len(s) {
				c := s[i]
				switch {
				case mask&(1<<i) != 0:
					b.WriteString(pct(c, upper))
				case upper && caseFlips:
					b.WriteString(flipCase(c))
				default:
					b.WriteByte(c)
				}
			}
			b.WriteString(encodeAll(suffix, upper))
			if sp := b.String(); !seen[sp] {
				seen[sp] = true
				out = append(out, sp)
			}
		}
	}
	return out
}

// nameSpellings spells a parameter name: its last eight characters (the
// "password" or "username" in it) as spellings does, a longer name's
// prefix ("sentinel_") alternately as it is and all encoded.
func nameSpellings(name string) []string {
	word, prefix := name, ""
	if len(name) > 8 {
		prefix, word = name[:len(name)-8], name[len(name)-8:]
	}
	out := spellings(word, "", true)
	for i := range out {
		p := prefix
		if i%2 == 1 {
			p = encodeAll(prefix, i%4 == 1)
		}
		out[i] = p + out[i]
	}
	return out
}

func flipCase(c byte) string {
	switch {
	case 'a' <= c && c <= 'z':
		return string(c - 'a' + 'A')
	case 'A' <= c && c <= 'Z':
		return string(c - 'A' + 'a')
	}
	return string(c)
}

func pct(c byte, upper bool) string {
	if upper {
		return fmt.Sprintf("%%%02X", c)
	}
	return fmt.Sprintf("%%%02x", c)
}

// some is a few of spellings' spellings, for the cases that do I/O: none
// encoded, all encoded, and each character alone encoded.
func some(s, suffix string) []string {
	out := []string{s + encodeAll(suffix, true), encodeAll(s, false) + encodeAll(suffix, false), encodeAll(s+suffix, true)}
	for i := range len(s) {
		out = append(out, s[:i]+pct(s[i], i%2 == 0)+s[i+1:]+encodeAll(suffix, i%2 == 1))
	}
	return out
}

func encodeAll(s string, upper bool) string {
	var b strings.Builder
	for i := range len(s) {
		b.WriteString(pct(s[i], upper))
	}
	return b.String()
}

// shows says whether text shows secret in any spelling.
func shows(text, secret string) bool { return exampletest.ShowsSecret(text, secret) }

// goRedisLog captures what go-redis logs while a test runs (its logger is
// global: the tests of this package do not run in parallel).
type goRedisLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *goRedisLog) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}

func (l *goRedisLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func captureGoRedisLog(t *testing.T) *goRedisLog {
	l := &goRedisLog{}
	redis.SetLogger(l)
	t.Cleanup(func() { redis.SetLogger(&discard{}) })
	return l
}

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

// A URL template: USER and PASS are replaced by spellings of the userinfo's
// user and password, NAME and VALUE by a credential parameter's name and
// value. Every template is one go-redis or the examples refuse, most of
// them after go-redis has read the credentials (a bad parameter after
// them, an empty addr=, a database that is not a number, a dead server).
var (
	userinfoURLs = []string{
		// one server (redis.ParseURL)
		"redis://USER:PASS@127.0.0.1:1/0?dial_timeout=zz",
		"redis://USER:PASS@127.0.0.1:1/x",
		"redis://USER:PASS@127.0.0.1:1/0?nope=1",
		"redis://USER:PASS@127.0.0.1:port/0",
		"rediss://USER:PASS@127.0.0.1:1/0?skip_verify=maybe",
		"unix://USER:PASS@/run/redis.sock?db=x",
		"http://USER:PASS@127.0.0.1:1",
		// no '@' after the password: the parser reads it as a port
		"redis://USER:PASS",
		"rediss://USER:PASS/0",
		"unix://USER:PASS?db=1",
		"redis://USER:PASS:6379",
		// a cluster (redis.ParseClusterURL)
		"redis://USER:PASS@127.0.0.1:1?addr=127.0.0.1:2&dial_timeout=zz",
		"redis://USER:PASS@127.0.0.1:1?addr=nohost",
		"redis://USER:PASS@127.0.0.1:1?cluster=true&db=1",
		"redis://USER:PASS@127.0.0.1:1?cluster=maybe",
		// the sentinels' credentials (redis.ParseFailoverURL)
		"redis://USER:PASS@127.0.0.1:1?master_name=m&dial_timeout=zz",
		"redis://USER:PASS@127.0.0.1:1/x?master_name=m",
		"redis://USER:PASS@127.0.0.1:1?master_name=m&addr=",
		"redis://USER:PASS@127.0.0.1:1?master_name=m&route_randomly=true",
	}
	paramURLs = []string{
		// the master's credentials in a Sentinel URL (the only ones
		// go-redis reads from parameters), then a fault
		"redis://127.0.0.1:1/0?master_name=m&NAME=VALUE&addr=",
		"redis://127.0.0.1:1/0?master_name=m&NAME=VALUE&dial_timeout=zz",
		"redis://127.0.0.1:1/x?master_name=m&NAME=VALUE",
		"redis://127.0.0.1:1?NAME=VALUE&master_name=m&replica_only=true",
		"redis://127.0.0.1:1?master_name=m&NAME=VALUE&NAME=VALUE&nope=1",
		// a credential parameter where go-redis takes none: an unknown
		// option, which the error names
		"redis://127.0.0.1:1/0?NAME=VALUE&dial_timeout=zz",
		"redis://127.0.0.1:1/0?dial_timeout=3s&NAME=VALUE",
		"redis://127.0.0.1:1?cluster=true&NAME=VALUE",
		"redis://127.0.0.1:1?addr=127.0.0.1:2&NAME=VALUE#frag",
		"redis://127.0.0.1:1;NAME=VALUE",
	}
	// The names of the credential parameters: go-redis's (username=,
	// password=) and the sentinels' (as FailoverOptions names them, which
	// go-redis takes only from the userinfo).
	credentialParams = []string{"password", "username", "sentinel_password", "sentinel_username"}
)

// No spelling of a secret in a Redis URL appears in Open's error or in
// what go-redis logs: the userinfo's user and password, and the value of
// every credential parameter, each spelled with every subset of its
// characters percent-encoded (upper and lower hex), with structural
// characters encoded in it, and each parameter name spelled the same ways
// and in either case, in single-server, cluster and Sentinel URLs that
// go-redis or the examples refuse after reading the credentials.
func TestOpenNeverPrintsSecrets(t *testing.T) {
	log := captureGoRedisLog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	checked, leaked, start := 0, 0, time.Now()
	check := func(url string, secrets ...string) {
		t.Helper()
		checked++
		r, err := embedded.Open(ctx, url)
		if err == nil {
			r.Close()
			t.Fatalf("Open(%q) succeeded", url)
		}
		for _, s := range secrets {
			if shows(err.Error(), s) {
				if leaked++; leaked <= 5 {
					t.Errorf("Open(%q): the error shows %q: %v", url, s, err)
				}
				return
			}
		}
	}
	userinfo := func(tmpl, user, pass string) string {
		return strings.NewReplacer("USER", user, "PASS", pass).Replace(tmpl)
	}
	param := func(tmpl, name, value string) string {
		return strings.NewReplacer("NAME", name, "VALUE", value).Replace(tmpl)
	}

	users, passes := spellings(secretUser, structural, false), spellings(secretPass, structural, false)
	for _, tmpl := range userinfoURLs {
		for _, u := range users {
			check(userinfo(tmpl, u, secretPass), secretUser, secretPass)
		}
		for _, p := range passes {
			check(userinfo(tmpl, secretUser, p), secretUser, secretPass)
		}
	}
	for _, name := range credentialParams {
		names := nameSpellings(name)
		for _, tmpl := range paramURLs {
			for _, n := range names {
				check(param(tmpl, n, secretPass), secretPass)
			}
			for _, v := range passes {
				check(param(tmpl, name, v), secretPass)
			}
		}
	}

	// Servers that are not there, and one that refuses the password: the
	// errors of a dial or of AUTH, and what go-redis logs meanwhile.
	dead := redistest.Start(t)
	deadAddr := dead.Addr()
	dead.Kill()
	auth := redistest.Start(t)
	if err := auth.Client.ConfigSet(ctx, "requirepass", "another").Err(); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{deadAddr, auth.Addr()} {
		for _, p := range some(secretPass, structural) {
			for _, u := range []string{
				"redis://" + secretUser + ":" + p + "@" + addr + "/0",
				"redis://" + secretUser + ":" + p + "@" + addr + "?cluster=true",
				"redis://" + secretUser + ":" + p + "@" + addr + "?master_name=m&password=" + p,
				"redis://" + addr + "/0?master_name=m&%70assword=" + p + "&username=" + p,
			} {
				check(u, secretUser, secretPass)
			}
		}
	}
	// A URL that works: what the examples print about it (the startup
	// line, the Target) shows no secret either.
	if err := auth.Client.ConfigSet(ctx, "requirepass", secretPass+structural).Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range some(secretPass, structural) {
		r, err := embedded.Open(ctx, "redis://:"+p+"@"+auth.Addr()+"/0")
		if err != nil {
			t.Fatalf("password %q: %v", p, err)
		}
		printed := fmt.Sprintf("%s %v %+v %#v %v", r.Desc, r.Target, r.Target, r.Target, *r.Target)
		r.Close()
		if shows(printed, secretPass) {
			t.Errorf("password %q: shown in %s", p, printed)
		}
	}
	if l := log.text(); shows(l, secretUser) || shows(l, secretPass) {
		t.Errorf("go-redis logged a secret:\n%s", l)
	}
	if leaked > 0 {
		t.Errorf("%d of %d URLs' errors show a secret", leaked, checked)
	}
	t.Logf("%d URLs refused in %v", checked, time.Since(start))
}

// The examples' SecretURLs name no Redis that may be someone's: a URL that
// parses names only port 1 of loopback, where nothing listens, so the
// programs run on them (exampletest.MainHidesSecrets) reach no server.
func TestSecretURLsReachNoRedis(t *testing.T) {
	for _, url := range exampletest.SecretURLs {
		target, err := embedded.ParseURL(url)
		if err != nil {
			continue
		}
		for _, a := range target.Addrs {
			if a != "127.0.0.1:1" && a != "127.0.0.1:2" {
				t.Errorf("%q names %s", url, a)
			}
		}
	}
}
