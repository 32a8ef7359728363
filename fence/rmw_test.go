package fence_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/testkit"
)

// The read-modify-write interleaving that a fenced write alone does not
// stop, forced by stalled connections rather than timing: holder A reads,
// its lease ends (its connections stall: A is cut off), B takes the lock
// and reads, A's write (held in the network) lands, B writes.
//
// Read with Claim, A's late write is refused: B's claim stored B's token
// before it arrived. Read with Get (the unsafe pattern the package
// documentation warns about), no newer token is stored when A's write
// arrives, so it is accepted, and B's write, computed from the same read,
// overwrites it: two accepted increments, one in the value.
func TestReadModifyWriteInterleaved(t *testing.T) {
	t.Run("Claim", func(t *testing.T) {
		accepted, value := interleaveRMW(t, (*fence.Redis).Claim)
		if accepted != 1 || value != 1 {
			t.Fatalf("%d increments accepted, value %d: want A's refused and B's alone counted", accepted, value)
		}
	})
	t.Run("GetThenSet loses an update", func(t *testing.T) {
		get := func(s *fence.Redis, ctx context.Context, key string, _ int64) (fence.Entry, bool, error) {
			return s.Get(ctx, key)
		}
		accepted, value := interleaveRMW(t, get)
		if accepted != 2 || value != 1 {
			t.Fatalf("%d increments accepted, value %d: want both accepted and one lost (the unsafe pattern)", accepted, value)
		}
	})
}

type readFunc func(s *fence.Redis, ctx context.Context, key string, token int64) (fence.Entry, bool, error)

// interleaveRMW runs the interleaving with read as the read of both
// read-modify-writes (increments of a counter at 0) and returns how many of
// the two writes were accepted and the counter's final value.
func interleaveRMW(t *testing.T, read readFunc) (accepted, value int64) {
	t.Helper()
	const key = "counter"
	c := newCutOff(t)
	ctx := ctxT(t)
	mustSet(t, c.storeB, key, "0", 1)
	incr := func(s *fence.Redis, token int64) (int64, error) { // read; the write comes later
		e, _, err := read(s, ctx, key, token)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(e.Value, 10, 64)
		return n + 1, err
	}

	la, err := c.a.Acquire(ctx, "counter", core.TTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	nextA, err := incr(c.storeA, la.Token()) // 1. A reads
	if err != nil {
		t.Fatalf("A's read: %v", err)
	}
	late := c.holdWrite(t, func(ctx context.Context) error {
		return c.storeA.Set(ctx, key, strconv.FormatInt(nextA, 10), la.Token())
	})
	lb := c.handOver(t, la)                  // 2. A's lease ends, B takes the lock
	nextB, err := incr(c.storeB, lb.Token()) // 3. B reads
	if err != nil {
		t.Fatalf("B's read: %v", err)
	}

	c.heal() // 4. A's write lands
	aErr := testkit.Recv(t, late, 30*time.Second, "A's write to land")
	switch {
	case aErr == nil:
		accepted++
	case errors.Is(aErr, fence.ErrStale):
		wantStale(t, aErr, key, la.Token(), lb.Token())
	default:
		t.Fatalf("A's write: %v", aErr)
	}
	mustSet(t, c.storeB, key, strconv.FormatInt(nextB, 10), lb.Token()) // 5. B writes
	accepted++

	e, _ := mustGet(t, c.storeB, key)
	if value, err = strconv.ParseInt(e.Value, 10, 64); err != nil {
		t.Fatal(err)
	}
	t.Logf("A (token %d) read %d, B (token %d) read %d; A's write: %v; final %d", la.Token(), nextA-1, lb.Token(), nextB-1, aErr, value)
	return accepted, value
}
