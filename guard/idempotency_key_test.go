package guard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/guard"
)

func TestParseIdempotencyKey(t *testing.T) {
	long := strings.Repeat("k", guard.MaxIdempotencyKeyLen)
	for _, tc := range []struct {
		name  string
		lines []string
		key   string // "" with ok: an error is wanted
		ok    bool
	}{
		{"absent", nil, "", false},
		{"quoted", []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{"bare", []string{`8e03978e-40d5-43e8-bc93-6894a57f9324`}, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{"spaces around", []string{" \t\"abc\" "}, "abc", true},
		{"escapes", []string{`"a\"b\\c"`}, `a"b\c`, true},
		{"space inside quotes", []string{`"a b"`}, "a b", true},
		{"255 bytes", []string{long}, long, true},
		{"255 bytes quoted", []string{guard.QuoteIdempotencyKey(long)}, long, true},
		{"same key twice, two lines", []string{`"abc"`, `abc`}, "abc", true},
		{"same key twice, one line", []string{`"abc", abc`}, "abc", true},
		{"empty line", []string{""}, "", true},
		{"empty quoted", []string{`""`}, "", true},
		{"256 bytes", []string{long + "k"}, "", true},
		{"256 bytes quoted", []string{guard.QuoteIdempotencyKey(long + "k")}, "", true},
		{"control char", []string{"\"a\x01b\""}, "", true},
		{"control char bare", []string{"a\x7fb"}, "", true},
		{"tab inside quotes", []string{"\"a\tb\""}, "", true},
		{"non-ASCII", []string{`"café"`}, "", true},
		{"non-ASCII bare", []string{`café`}, "", true},
		{"bad escape", []string{`"a\nb"`}, "", true},
		{"escape at end", []string{`"ab\`}, "", true},
		{"unterminated", []string{`"abc`}, "", true},
		{"text after", []string{`"abc" def`}, "", true},
		{"bare with space", []string{`abc def`}, "", true},
		{"bare with quote", []string{`ab"c`}, "", true},
		{"bare with backslash", []string{`ab\c`}, "", true},
		{"parameters", []string{`"abc";v=1`}, "", true},
		{"bare parameters", []string{`abc;v=1`}, "", true},
		{"two keys, one line", []string{`"abc", "abd"`}, "", true},
		{"two keys, two lines", []string{`abc`, `abd`}, "", true},
		{"trailing comma", []string{`"abc",`}, "", true},
		{"leading comma", []string{`,"abc"`}, "", true},
		{"one good line, one empty", []string{`abc`, ``}, "", true},
	} {
		key, ok, err := guard.ParseIdempotencyKey(tc.lines)
		switch {
		case tc.key != "" && (err != nil || !ok || key != tc.key):
			t.Errorf("%s: %q %v %v, want %q", tc.name, key, ok, err, tc.key)
		case tc.key == "" && tc.ok && (!errors.Is(err, guard.ErrIdempotencyKey) || ok || key != ""):
			t.Errorf("%s: %q %v %v, want ErrIdempotencyKey", tc.name, key, ok, err)
		case tc.key == "" && !tc.ok && (err != nil || ok):
			t.Errorf("%s: %q %v %v, want absent", tc.name, key, ok, err)
		}
		if err != nil && len(tc.lines) == 1 && len(tc.lines[0]) > 3 && strings.Contains(err.Error(), tc.lines[0]) {
			t.Errorf("%s: the error repeats the key: %v", tc.name, err)
		}
	}
}

// The quoted and the bare spelling of a key are one key; nothing panics;
// what is accepted is 1–255 bytes of printable ASCII.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{`"abc"`, `abc`, `"a\"b"`, `"a\\b"`, ``, `""`, `"abc", abc`, `a,b`, "\"\x00\"", `"é"`, strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		key, ok, err := guard.ParseIdempotencyKey([]string{line})
		if err != nil {
			if ok || key != "" || !errors.Is(err, guard.ErrIdempotencyKey) {
				t.Fatalf("%q: %q %v %v", line, key, ok, err)
			}
			return
		}
		if !ok || len(key) < 1 || len(key) > guard.MaxIdempotencyKeyLen {
			t.Fatalf("%q: accepted %q (%d bytes)", line, key, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("%q: accepted %q with byte %#x", line, key, key[i])
			}
		}
		if q, _, err := guard.ParseIdempotencyKey([]string{guard.QuoteIdempotencyKey(key)}); err != nil || q != key {
			t.Fatalf("%q: %q quoted reads %q, %v", line, key, q, err)
		}
		if !strings.ContainsAny(key, " \",;\\") {
			if b, _, err := guard.ParseIdempotencyKey([]string{key}); err != nil || b != key {
				t.Fatalf("%q: %q bare reads %q, %v", line, key, b, err)
			}
		}
		// The line as a second line of the same key, and as a second
		// member of one line, is the same key.
		if k2, _, err := guard.ParseIdempotencyKey([]string{guard.QuoteIdempotencyKey(key), line}); err != nil || k2 != key {
			t.Fatalf("%q: two lines of %q read %q, %v", line, key, k2, err)
		}
	})
}

// multiReader hands over every line of a header.
type multiReader struct{ mapReader }

func (multiReader) HeaderValues(r req, name string) []string {
	if v, ok := r["lines:"+name]; ok {
		return strings.Split(v, "\n")
	}
	return nil
}

func TestClientKey(t *testing.T) {
	optional, err := guard.NewIdempotency[req](mapReader{})
	if err != nil {
		t.Fatal(err)
	}
	required, err := guard.NewIdempotency(mapReader{}, guard.IdempotencyRequired[req](), guard.IdempotencyHeader[req]("X-Key"))
	if err != nil {
		t.Fatal(err)
	}
	multi, err := guard.NewIdempotency[req](multiReader{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		x    *guard.Idempotency[req]
		r    req
		key  string
		ok   bool
		err  error
	}{
		{"optional, absent: runs as today", optional, req{}, "", false, nil},
		{"optional, present", optional, req{"header:Idempotency-Key": `"k1"`}, "k1", true, nil},
		{"optional, bad", optional, req{"header:Idempotency-Key": `"k1`}, "", false, guard.ErrIdempotencyKey},
		{"required, absent", required, req{}, "", false, guard.ErrIdempotencyKeyMissing},
		{"required, in its own header", required, req{"header:X-Key": "k1", "header:Idempotency-Key": "k2"}, "k1", true, nil},
		{"every line read", multi, req{"lines:Idempotency-Key": "k1\nk2"}, "", false, guard.ErrIdempotencyKey},
		{"every line the same", multi, req{"lines:Idempotency-Key": "k1\n\"k1\""}, "k1", true, nil},
		{"an empty line is not absent", multi, req{"lines:Idempotency-Key": ""}, "", false, guard.ErrIdempotencyKey},
	} {
		key, ok, err := tc.x.ClientKey(tc.r)
		if key != tc.key || ok != tc.ok || (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) {
			t.Errorf("%s: %q %v %v, want %q %v %v", tc.name, key, ok, err, tc.key, tc.ok, tc.err)
		}
	}
}

func TestApplies(t *testing.T) {
	def, _ := guard.NewIdempotency[req](mapReader{})
	put, _ := guard.NewIdempotency(mapReader{}, guard.IdempotencyMethods[req]("PUT", "POST"))
	for _, tc := range []struct {
		x      *guard.Idempotency[req]
		method string
		want   bool
	}{
		{def, "POST", true}, {def, "PATCH", true}, {def, "PUT", false}, {def, "GET", false}, {def, "DELETE", false}, {def, "post", false},
		{put, "PUT", true}, {put, "POST", true}, {put, "PATCH", false},
	} {
		if got := tc.x.Applies(tc.method); got != tc.want {
			t.Errorf("%v: Applies(%s) = %v", tc.x.Config().Methods, tc.method, got)
		}
	}
}
