package guard_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/guard"
)

// countingReader counts the bytes read through it: an independent witness
// of how much of a client's body was read.
type countingReader struct {
	r     io.Reader
	n     int
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	c.reads++
	return n, err
}

func TestReadBody(t *testing.T) {
	const limit = 1000
	for _, tc := range []struct {
		name  string
		size  int
		err   error
		reads int // at most this many bytes read from the client
	}{
		{"empty", 0, nil, 0},
		{"small", 10, nil, 10},
		{"at the limit", limit, nil, limit},
		{"one byte over", limit + 1, guard.ErrBodyTooLarge, limit + 1},
		{"far over", 50 * limit, guard.ErrBodyTooLarge, limit + 1},
	} {
		body := bytes.Repeat([]byte("x"), tc.size)
		c := &countingReader{r: bytes.NewReader(body)}
		got, err := guard.ReadBody(c, limit)
		switch {
		case tc.err != nil && (!errors.Is(err, tc.err) || got != nil):
			t.Errorf("%s: %d bytes, %v; want %v", tc.name, len(got), err, tc.err)
		case tc.err == nil && (err != nil || !bytes.Equal(got, body)):
			t.Errorf("%s: %d bytes, %v", tc.name, len(got), err)
		}
		if c.n > tc.reads {
			t.Errorf("%s: read %d bytes of the client's body, want at most %d", tc.name, c.n, tc.reads)
		}
		if tc.err == nil {
			// The handler reads the same bytes, as often as it asks.
			for range 2 {
				again, err := io.ReadAll(guard.NewBody(got))
				if err != nil || !bytes.Equal(again, body) {
					t.Errorf("%s: the handler reads %d bytes, %v", tc.name, len(again), err)
				}
			}
		}
	}
	if b, err := guard.ReadBody(http.NoBody, limit); b != nil || err != nil {
		t.Errorf("NoBody: %q %v", b, err)
	}
	if guard.NewBody(nil) != http.NoBody {
		t.Error("an empty body is not http.NoBody to the handler")
	}
	boom := errors.New("client went away")
	if _, err := guard.ReadBody(io.MultiReader(strings.NewReader("abc"), errReader{boom}), limit); !errors.Is(err, boom) {
		t.Errorf("a read error is %v", err)
	}
	x, _ := guard.NewIdempotency(mapReader{}, guard.IdempotencyMaxBody[req](5))
	if _, err := x.ReadBody(strings.NewReader("123456")); !errors.Is(err, guard.ErrBodyTooLarge) {
		t.Errorf("MaxBody(5) read 6 bytes: %v", err)
	}
	def, _ := guard.NewIdempotency[req](mapReader{})
	if _, err := def.ReadBody(bytes.NewReader(make([]byte, guard.DefaultMaxBody))); err != nil {
		t.Errorf("1 MiB: %v", err)
	}
	if _, err := def.ReadBody(bytes.NewReader(make([]byte, guard.DefaultMaxBody+1))); !errors.Is(err, guard.ErrBodyTooLarge) {
		t.Errorf("1 MiB + 1: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
