package core_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// The fencing rule on a real redis-server, against integer arithmetic:
// max(last + 1, TIME in µs), for given TIME replies (microseconds with
// fewer than six digits included) and last tokens behind, equal to, ahead
// of and longer than the clock, then random ones around the clock; and
// with the server's own TIME. The script builds and compares the common
// case as strings, so this is where a padding or ordering mistake shows.
func TestNextFenceRule(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testkit.Context(t, 30*time.Second)
	check := func(last string, sec, usec int64) {
		t.Helper()
		clock := sec*1_000_000 + usec
		want := clock
		if last != "" {
			if l, _ := strconv.ParseInt(last, 10, 64); l >= clock {
				want = l + 1
			}
		}
		got, err := core.NextFence(ctx, srv.Client, last, strconv.FormatInt(sec, 10), strconv.FormatInt(usec, 10))
		if err != nil {
			t.Fatal(err)
		}
		if got != strconv.FormatInt(want, 10) {
			t.Errorf("next_fence(last %q, TIME %d s %d µs) = %q, want %d", last, sec, usec, got, want)
		}
	}
	const sec = 1764201234
	clock := int64(sec * 1_000_000)
	for _, usec := range []int64{0, 5, 99_999, 100_000, 999_999} {
		check("", sec, usec)
	}
	for _, last := range []int64{
		0, 5, clock - 1, clock, clock + 1, clock + 7, // behind, at and just ahead of the clock
		clock + 3_600_000_000, // an hour ahead, as long as the clock
		1764201299_000_000,    // ahead in a later digit
		1764201199_999_999,    // behind in a later digit
		999_999_999_999_999,   // shorter
	} {
		check(strconv.FormatInt(last, 10), sec, 7)
	}
	// A whole second (microseconds 0, padded to six zeros) against a last
	// token just behind and at it.
	check(strconv.FormatInt(clock-1, 10), sec, 0)
	check(strconv.FormatInt(clock, 10), sec, 0)
	// Longer than the clock (a clock of 15 digits: tokens stay below 2^53,
	// 16 digits, so Lua adds one exactly).
	check(strconv.FormatInt(clock, 10), 99_999_999, 7)
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		s := 1_000_000_000 + r.Int64N(1_000_000_000)
		u := r.Int64N(1_000_000)
		if r.IntN(4) == 0 {
			u = r.Int64N(1000)
		}
		last := s*1_000_000 + u + r.Int64N(2_000_001) - 1_000_000
		check(strconv.FormatInt(last, 10), s, u)
	}

	// The server's clock: a decimal integer at or after now.
	before := time.Now().UnixMicro()
	got, err := core.NextFence(ctx, srv.Client, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := strconv.ParseInt(got, 10, 64); err != nil || strconv.FormatInt(f, 10) != got || f < before-1_000_000 {
		t.Errorf("next_fence on the server's clock = %q, want about %d", got, before)
	}
}
