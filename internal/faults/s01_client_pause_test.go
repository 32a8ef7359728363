package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// childMsg is one line between the paused holder (a child process) and the
// test. Times are Unix nanoseconds (wall clock, comparable across processes
// of one machine).
type childMsg struct {
	Ev      string `json:"ev"`
	Token   int64  `json:"token,omitempty"`
	From    int64  `json:"from,omitempty"`
	Until   int64  `json:"until,omitempty"`
	Value   int64  `json:"value,omitempty"`
	Version uint64 `json:"version,omitempty"`
	OK      bool   `json:"ok,omitempty"`
	Stale   bool   `json:"stale,omitempty"` // refused: a newer token is stored
	Err     string `json:"err,omitempty"`

	// report
	ResumedAt           int64    `json:"resumedAt,omitempty"`
	CtxDoneAt           int64    `json:"ctxDoneAt,omitempty"`
	DoneAtResume        bool     `json:"doneAtResume,omitempty"`
	UntilPassedAtResume bool     `json:"untilPassedAtResume,omitempty"`
	CauseLost           bool     `json:"causeLost,omitempty"`
	Cause               string   `json:"cause,omitempty"`
	ReleaseNotHeld      bool     `json:"releaseNotHeld,omitempty"`
	ReleaseErr          string   `json:"releaseErr,omitempty"`
	SentAfterDeadline   []string `json:"sentAfterDeadline,omitempty"`
}

// Scenario 1: a client paused (SIGSTOP) past its TTL while holding a lock,
// in the middle of a read-modify-write. Another client acquires meanwhile.
// On SIGCONT the paused holder finds its lease lost (Context done, cause
// ErrLost), sends nothing to Redis for it (no renewal after its deadline),
// and its late write is rejected by the fenced resource; the believed-hold
// intervals (the child's cut at its Until) do not overlap. The in-process
// variant (the renewal goroutine frozen by a hook) is in core
// (TestFrozenRenewerNeverRenewsALostLease).
func TestS01ClientPausedPastTTL(t *testing.T) {
	const key = "s01:pause"
	const ttl = time.Second
	srv := redistest.Start(t)
	c := startChild(t, "holder", "LOCK_ADDR="+srv.Addr(), "LOCK_KEY="+key, "LOCK_TTL="+ttl.String())
	reply, next := c.send, c.next
	hist, res := faults.NewHistory(), faults.NewResource()
	live := faults.NewLiveness("parent")
	ctx := testkit.Context(t, 60*time.Second)

	acq := next("acquired")
	next("read")
	snap := res.Read(key)
	reply(childMsg{Ev: "snapshot", Value: snap.Value, Version: snap.Version})
	next("ready") // mid read-modify-write
	c.signal(syscall.SIGSTOP)
	stoppedAt := time.Now()

	// Another client takes the lock once the paused holder's expires.
	parent := newClient(t, srv.NewClient(), core.WithOwner("parent"), core.WithTTL(ttl))
	live.Healed() // the fault that matters to the waiter: the holder is gone
	lp, err := parent.Acquire(ctx, key, core.Wait(10*time.Second))
	if err != nil {
		t.Fatalf("second client: %v", err)
	}
	live.Acquired("parent")
	acquiredAfter := time.Since(stoppedAt)
	hp := hist.Begin("parent", lp)
	if err := res.Increment(key, lp.Token(), 0); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}
	// Keep the child frozen past its local deadline, with a margin.
	childUntil := time.Unix(0, acq.Until)
	if d := time.Until(childUntil); d > 0 {
		t.Fatalf("second client holds %v before the child's deadline", d)
	}
	c.signal(syscall.SIGCONT)
	reply(childMsg{Ev: "go"})

	w := next("write")
	werr := res.Write(key, w.Token, faults.Snapshot{Value: w.Value - 1, Version: w.Version}, w.Value)
	reply(childMsg{Ev: "written", OK: werr == nil, Err: fmt.Sprint(werr)})
	rep := next("report")
	c.wait()

	// The paused holder found its lease lost, and its validity over, on resume.
	if !rep.UntilPassedAtResume {
		t.Errorf("on resume the child's Until was still ahead")
	}
	if !rep.DoneAtResume {
		// The deadline timer and the first goroutine to run after SIGCONT
		// race; the context must end at once anyway (checked below).
		t.Logf("note: the lease context was not yet done at the first look after resume")
	}
	if !rep.CauseLost {
		t.Errorf("child lease cause = %q, want ErrLost", rep.Cause)
	}
	if rep.CtxDoneAt == 0 || rep.CtxDoneAt-rep.ResumedAt > int64(time.Second) {
		t.Errorf("the child's lease context ended %v after resume", time.Duration(rep.CtxDoneAt-rep.ResumedAt))
	}
	// It never renewed: nothing left its Redis client after its deadline.
	if len(rep.SentAfterDeadline) > 0 {
		t.Errorf("the paused holder sent after its deadline: %v", rep.SentAfterDeadline)
	}
	if !rep.ReleaseNotHeld {
		t.Errorf("child Release after loss = %q, want ErrNotHeld", rep.ReleaseErr)
	}
	// Its stale write was rejected by the fenced resource.
	if !errors.Is(werr, faults.ErrStaleToken) {
		t.Errorf("the paused holder's late write = %v, want a stale-token rejection", werr)
	}
	// The second client still holds the lock (not extended or taken by the child).
	h, held, err := parent.Inspect(ctx, key)
	if err != nil || !held || h.Owner != "parent" || h.Token != lp.Token() || lp.Err() != nil {
		t.Errorf("after the child resumed: holder %+v held %v err %v lease %v", h, held, err, lp.Err())
	}
	if lp.Token() <= acq.Token {
		t.Errorf("token %d not above the paused holder's %d", lp.Token(), acq.Token)
	}

	// Believed holds: the child's from its acquire to min(Until, context end).
	to := time.Unix(0, rep.Until)
	end := faults.EndUntil
	if rep.CtxDoneAt != 0 && rep.CtxDoneAt < rep.Until {
		to, end = time.Unix(0, rep.CtxDoneAt), faults.EndContext
	}
	hist.Add(faults.Interval{Key: key, Who: "child", Token: acq.Token, From: time.Unix(0, acq.From), To: to, End: end})
	hp.Released()
	if err := lp.Release(ctx); err != nil {
		t.Fatal(err)
	}
	verdict(t, hist, res, false)
	if st := res.Stats(); st.Accepted != 1 || st.Rejected != 1 {
		t.Errorf("resource %+v, want 1 accepted, 1 rejected", st)
	}
	if err := live.Check(ttl + 3*time.Second); err != nil {
		t.Error(err)
	}
	noLeftovers(t, 5*time.Second, srv.Client)
	t.Logf("second client acquired %v after SIGSTOP; child lease ended %v after resume (already done at first look: %v); history %v",
		acquiredAfter.Round(time.Millisecond), time.Duration(rep.CtxDoneAt-rep.ResumedAt), rep.DoneAtResume, hist.Intervals())
}

// holderChild is the paused holder of TestS01ClientPausedPastTTL: it
// acquires, reads the resource through the parent, says "ready" and waits
// (the parent SIGSTOPs it here); on "go" it looks at its lease, writes what
// it computed anyway (as a process that was paused between its check and
// its write would) and reports.
func holderChild() error {
	ttl, err := time.ParseDuration(os.Getenv("LOCK_TTL"))
	if err != nil {
		return err
	}
	key := os.Getenv("LOCK_KEY")
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("LOCK_ADDR"), ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer rdb.Close()
	log := &cmdLog{}
	rdb.AddHook(testkit.EachCommand(log.add))
	c, err := core.New(rdb, core.WithOwner("child"), core.WithTTL(ttl))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, key, core.Wait(10*time.Second))
	if err != nil {
		return err
	}
	from := time.Now()
	var ctxDoneAt atomic.Int64
	recorded := make(chan struct{}) // AfterFunc runs on a goroutine of its own: the report waits for it
	context.AfterFunc(l.Context(), func() { ctxDoneAt.Store(time.Now().UnixNano()); close(recorded) })

	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	read := func(want string) (childMsg, error) {
		if !in.Scan() {
			return childMsg{}, fmt.Errorf("stdin closed before %q: %v", want, in.Err())
		}
		var m childMsg
		if err := json.Unmarshal(in.Bytes(), &m); err != nil || m.Ev != want {
			return m, fmt.Errorf("got %q, want %q (%v)", in.Text(), want, err)
		}
		return m, nil
	}
	if err := out.Encode(childMsg{Ev: "acquired", Token: l.Token(), From: from.UnixNano(), Until: l.Until().UnixNano()}); err != nil {
		return err
	}
	if err := out.Encode(childMsg{Ev: "read"}); err != nil {
		return err
	}
	snap, err := read("snapshot")
	if err != nil {
		return err
	}
	if err := out.Encode(childMsg{Ev: "ready"}); err != nil {
		return err
	}
	if _, err := read("go"); err != nil {
		return err
	}
	// First thing after the resume: is the lease over?
	resumed := time.Now()
	doneAtResume := l.Context().Err() != nil
	untilPassed := !resumed.Before(l.Until())
	select {
	case <-recorded: // the lease's context ended, and when is recorded
	case <-time.After(5 * time.Second):
	}
	cause := context.Cause(l.Context())

	if err := out.Encode(childMsg{Ev: "write", Token: l.Token(), Value: snap.Value + 1, Version: snap.Version}); err != nil {
		return err
	}
	if _, err := read("written"); err != nil {
		return err
	}
	relErr := l.Release(ctx)
	var sent []string
	for _, s := range log.since(l.Until()) {
		sent = append(sent, s.args)
	}
	return out.Encode(childMsg{
		Ev: "report", ResumedAt: resumed.UnixNano(), CtxDoneAt: ctxDoneAt.Load(), DoneAtResume: doneAtResume,
		UntilPassedAtResume: untilPassed, CauseLost: errors.Is(cause, core.ErrLost), Cause: fmt.Sprint(cause),
		Until: l.Until().UnixNano(), ReleaseNotHeld: errors.Is(relErr, core.ErrNotHeld), ReleaseErr: fmt.Sprint(relErr),
		SentAfterDeadline: sent,
	})
}
