package embedded_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/examples/internal/embedded"
	"github.com/lockkit/lockkit/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The embedded server works with the engine, and its TTLs run out in real
// time (the ticker advances miniredis's clock): a holder that stopped
// renewing (NoRenew) loses the lock at its TTL and another client gets it.
func TestEmbeddedExpiresInRealTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := embedded.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Embedded {
		t.Fatal("not embedded")
	}
	c, err := core.New(r.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(ctx, "order:1", core.TTL(time.Second), core.NoRenew())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, "order:1"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("second acquire while held: %v", err)
	}
	l2, err := c.Acquire(ctx, "order:1", core.Wait(10*time.Second)) // woken by expiry, not by a release
	if err != nil {
		t.Fatalf("lock did not expire on the embedded server: %v", err)
	}
	if l2.Token() <= l.Token() {
		t.Errorf("tokens %d then %d", l.Token(), l2.Token())
	}
	_ = l2.Release(ctx)
}

// single is c as the *redis.Client a single-server URL gives.
func single(t *testing.T, c redis.UniversalClient) *redis.Client {
	t.Helper()
	s, ok := c.(*redis.Client)
	if !ok {
		t.Fatalf("client %T, want *redis.Client", c)
	}
	return s
}

func TestOpenURL(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := embedded.Open(ctx, "redis://"+srv.Addr()+"/0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Embedded || !single(t, r.Client).Options().ContextTimeoutEnabled {
		t.Fatalf("embedded %v, ContextTimeoutEnabled %v", r.Embedded, single(t, r.Client).Options().ContextTimeoutEnabled)
	}
	if _, err := core.New(r.Client); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if _, err := embedded.Open(ctx, "redis://"+srv.Addr()); err == nil {
		t.Fatal("Open of a dead Redis succeeded")
	}
	if _, err := embedded.Open(ctx, "http://nope"); err == nil {
		t.Fatal("Open of a bad URL succeeded")
	}
}

// NewClient gives another client of the same server, with options of its
// own (go-redis keeps per-client state in them).
func TestNewClient(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, url := range []string{"", "redis://" + srv.Addr() + "/0"} {
		r, err := embedded.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		c := single(t, r.NewClient())
		if c.Options() == single(t, r.Client).Options() || !c.Options().ContextTimeoutEnabled || c.Options().Addr != single(t, r.Client).Options().Addr {
			t.Errorf("%q: options shared or different: %+v", url, c.Options())
		}
		if err := c.Set(ctx, "k", url, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := r.Client.Get(ctx, "k").Result(); err != nil || v != url {
			t.Errorf("%q: the two clients see different servers: %q %v", url, v, err)
		}
		_ = c.Close()
		_ = r.Close()
	}
}

// No error of Open shows the user or password of the URL it was given,
// whatever is wrong with the URL: not a Redis scheme, a bad port, a '/' in
// the password (which makes the URL misparse around it), a bad database,
// an unknown option, no scheme at all, or a server that is not there.
func TestOpenNeverPrintsUserinfo(t *testing.T) {
	srv := redistest.Start(t)
	dead := srv.Addr()
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, url := range []string{
		"http://alice:hunterA@127.0.0.1:6379",
		"redis://alice:hunterA@127.0.0.1:port",
		"redis://alice:hunterA/hunterB@127.0.0.1:6379/0",
		"redis://alice:hunterA@127.0.0.1:6379/db",
		"redis://alice:hunterA@127.0.0.1:6379/0?nope=1",
		"redis://alice:hunter%zz@127.0.0.1:6379",
		"redis://alice:hunterA@[::1",
		"alice:hunterA@127.0.0.1:6379",
		"redis://alice:hunterA@" + dead,
		"rediss://alice:hunterA@" + dead,
		"redis://alice:hunterA@127.0.0.1:1?master_name=m&password=hunterB&nope=1",
		"redis://alice:hunterA@127.0.0.1:1?master_name=m&password=hunter%zz",
		"redis://alice:hunterA@" + dead + "?master_name=m&password=hunterB",
		"redis://alice:hunterA@" + dead + "?cluster=true",
		"redis://alice:hunterA@127.0.0.1:1?cluster=maybe",
		// A '#', '/' or '?' not encoded in the password: the parser reads
		// a host and port out of the userinfo and leaves the rest in a
		// fragment, a socket path or the query.
		"redis://alice:12#hunterA@127.0.0.1:1",
		"unix://alice:12/hunterA@/run/redis.sock",
		"redis://alice:12?hunterA@127.0.0.1:1/0",
		"redis:alice:hunterA@127.0.0.1:1",
		"redis://127.0.0.1:1/0?master_name=m&password=hunter@A&dial_timeout=zz",
	} {
		_, err := embedded.Open(ctx, url)
		if err == nil {
			t.Errorf("Open(%q) succeeded", url)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "hunter") || strings.Contains(msg, "alice") {
			t.Errorf("Open(%q): the error shows the userinfo: %s", url, msg)
		}
		t.Log(err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://127.0.0.1:6379/0":             "redis://127.0.0.1:6379/0",
		"redis://alice:pw@h:1/0":               "redis://xxxxx@h:1/0",
		"rediss://:pw@h:1":                     "rediss://xxxxx@h:1",
		"redis://alice:p/w@x@h:1":              "redis://xxxxx@h:1",
		"alice:pw@h:1":                         "xxxxx",
		"":                                     "",
		"unix://alice:pw@/run/redis.sock?db=1": "unix://xxxxx@/run/redis.sock?db=1",
		// A Sentinel URL: the userinfo is the sentinels', password= the master's.
		"redis://s:pw@h:1?master_name=m&password=pw2&addr=h:2": "redis://xxxxx@h:1?master_name=m&password=xxxxx&addr=h:2",
		"redis://h:1?addr=h:2&cluster=true":                    "redis://h:1?addr=h:2&cluster=true",
		// A parameter's name is judged decoded, in any case; its value is
		// hidden whole, encoded or not.
		"redis://h:1/0?master_name=m&%70assword=S3CRET4&addr=": "redis://h:1/0?master_name=m&%70assword=xxxxx&addr=",
		"redis://h:1/0?%70ASSWORD=X&dial_timeout=zz":           "redis://h:1/0?%70ASSWORD=xxxxx&dial_timeout=zz",
		"redis://h:1?master_name=m&%75ser%6Eame=u%40x&db=1":    "redis://h:1?master_name=m&%75ser%6Eame=xxxxx&db=1",
		"redis://h:1?pa%2573sword=x&Sentinel_Password=y":       "redis://h:1?pa%2573sword=xxxxx&Sentinel_Password=xxxxx",
		"redis://h:1?a=1;password=x":                           "redis://h:1?a=1;password=xxxxx",
		// What a password not percent-encoded spills into: the rest of
		// the query ('?' stays in the value), a fragment, and with an '@'
		// in it everything up to that '@'.
		"redis://h:1?password=a?b&db=1":                  "redis://h:1?password=xxxxx&db=1",
		"redis://h:1?password=ab#cd":                     "redis://h:1?password=xxxxx#xxxxx",
		"redis://h:1?password=a@b&sentinel_password=c#f": "redis://xxxxx&sentinel_password=xxxxx#xxxxx",
		"redis://alice:p?password=x@h:1":                 "redis://xxxxx",
		// A password without the '@' that ends it is read as a port: an
		// address that is not host:port is masked whole, and so is all
		// but a Redis scheme of a URL without "//".
		"redis://:pw":                    "redis://xxxxx",
		"redis://alice:pw?db=1":          "redis://xxxxx",
		"redis://alice:pw:6379/0":        "redis://xxxxx",
		"unix://:pw":                     "unix://xxxxx",
		"redis://%3Apw":                  "redis://xxxxx",
		"redis://[::1]:pw":               "redis://xxxxx",
		"redis://[::1:6379":              "redis://xxxxx",
		"redis://:pw@":                   "redis://xxxxx@",
		"REDIS:pw":                       "REDIS:xxxxx",
		"pw":                             "xxxxx",
		"http:pw@h:1":                    "xxxxx",
		"redis://[fe80::1%25en0]:6379/0": "redis://[fe80::1%25en0]:6379/0",
		"redis://cache-1.example_2:6379": "redis://cache-1.example_2:6379",
		"redis://h:/0":                   "redis://h:/0",
	} {
		if got := embedded.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// An error about the Redis a URL names says so: it names where the URL
// came from and never calls it the embedded one.
func TestOpenErrorsNameTheRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	dead := srv.Addr()
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, url := range []string{"redis://" + dead + "/0", "http://nope", "redis://127.0.0.1:port"} {
		_, err := embedded.Open(ctx, url)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", url)
		}
		if msg := err.Error(); !strings.Contains(msg, embedded.EnvURL) || strings.Contains(strings.ToLower(msg), "embedded") {
			t.Errorf("Open(%q): %s", url, msg)
		}
	}
}

// A rediss:// URL at a plaintext server fails within seconds: the TLS
// handshake, which redis-server never answers, is bounded (go-redis would
// otherwise dial five times, each waiting out its dial timeout: 25s).
func TestOpenTLSMismatchFailsFast(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	r, err := embedded.Open(ctx, "rediss://"+srv.Addr()+"/0")
	took := time.Since(start)
	if err == nil {
		r.Close()
		t.Fatal("Open of a rediss:// URL at a plaintext server succeeded")
	}
	if took > 10*time.Second {
		t.Errorf("took %v to fail: %v", took, err)
	}
	t.Logf("failed in %v: %v", took, err)
}

// Every client Open and NewClient make has the options the examples rely
// on: ContextTimeoutEnabled (core.New requires it), no re-sends
// (MaxRetries -1), and dial, read and write timeouts of seconds.
func TestClientOptions(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, url := range []string{"", "redis://" + srv.Addr() + "/0"} {
		r, err := embedded.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		c := single(t, r.NewClient())
		// (A client's Options are normalised: MaxRetries -1 reads 0, an
		// unset MaxRetries 3.)
		for _, o := range []*redis.Options{single(t, r.Client).Options(), c.Options()} {
			if !o.ContextTimeoutEnabled || o.MaxRetries != 0 || o.DialerRetries != 1 ||
				o.DialTimeout <= 0 || o.DialTimeout > 5*time.Second ||
				o.ReadTimeout <= 0 || o.ReadTimeout > 5*time.Second || o.WriteTimeout <= 0 || o.WriteTimeout > 5*time.Second {
				t.Errorf("%q: options %+v", url, o)
			}
		}
		_ = c.Close()
		_ = r.Close()
	}
}

// A rediss:// URL reaches a redis-server that speaks TLS (through the
// examples' own dialer, which replaces go-redis's).
func TestOpenTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, cert, key)
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for TLS
	if err != nil {
		t.Fatal(err)
	}
	tlsPort := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	redistest.Start(t, redistest.WithArgs("--tls-port", tlsPort, "--tls-cert-file", cert, "--tls-key-file", key, "--tls-auth-clients", "no"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := embedded.Open(ctx, "rediss://127.0.0.1:"+tlsPort+"/0?skip_verify=true")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := r.NewClient()
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Client.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET over TLS: %q %v", v, err)
	}
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key, PEM-encoded.
func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		t.Fatal(err)
	}
}
