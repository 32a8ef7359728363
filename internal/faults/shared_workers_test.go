package faults_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/faults"
)

// sharedRun is the workload of the shared-lock scenarios (13): on each
// Client, two workers on a semaphore of permits, a reader and a writer of
// a read/write lock. Each loops: acquire (waiting up to 20s), hold until
// its lease ends or 30ms pass, release. Every believed hold goes into
// hist; a writer increments the fenced resource under its token. Until
// heal, a failed acquire is the fault and is tried again; a round begun
// after it must acquire (a failure counts against liveness), and a worker
// stops once it has acquired `after` times in such rounds.
type sharedRun struct {
	semKey, rwKey string
	permits       int
	after         int
	hist          *faults.History
	res           *faults.Resource
	live          *faults.Liveness
	healed        chan struct{}
	wg            sync.WaitGroup

	mu    sync.Mutex
	count map[string]int // acquires in rounds begun after the heal, per worker
}

// sharedWorker is one loop of a sharedRun: who names it in the history.
type sharedWorker struct {
	who  string
	mode string
	c    *core.Client
}

// runShared starts the workers on clients, the keys prefix:sem and
// prefix:rw. A test that ends early stops them at its cleanup.
func runShared(t testing.TB, ctx context.Context, clients []*core.Client, prefix string, permits, after int) *sharedRun {
	ctx, cancel := context.WithCancel(ctx)
	r := &sharedRun{
		semKey: prefix + ":sem", rwKey: prefix + ":rw", permits: permits, after: after,
		hist: faults.NewHistory(), res: faults.NewResource(), healed: make(chan struct{}), count: map[string]int{},
	}
	var workers []sharedWorker
	var names []string
	for i, c := range clients {
		for _, w := range []sharedWorker{
			{fmt.Sprint("c", i, "/permit/0"), faults.ModePermit, c},
			{fmt.Sprint("c", i, "/permit/1"), faults.ModePermit, c},
			{fmt.Sprint("c", i, "/read"), faults.ModeRead, c},
			{fmt.Sprint("c", i, "/write"), faults.ModeWrite, c},
		} {
			workers = append(workers, w)
			names = append(names, w.who)
		}
	}
	r.live = faults.NewLiveness(names...)
	for _, w := range workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.loop(ctx, w)
		}()
	}
	t.Cleanup(func() { cancel(); r.wg.Wait() })
	return r
}

func (r *sharedRun) loop(ctx context.Context, w sharedWorker) {
	after := false // a round begun after the heal counts for liveness
	for round := 0; round < 1000 && ctx.Err() == nil; round++ {
		if !after {
			select {
			case <-r.healed:
				after = true
			default:
			}
		}
		l, err := r.acquire(ctx, w)
		if err != nil {
			if after {
				r.live.Failed(w.who, err)
				return
			}
			time.Sleep(10 * time.Millisecond) // the fault: a refused dial fails at once
			continue
		}
		hd := r.hist.BeginMode(w.who, w.mode, l)
		done := false
		if after {
			r.live.Acquired(w.who)
			r.mu.Lock()
			r.count[w.who]++
			done = r.count[w.who] >= r.after
			r.mu.Unlock()
		}
		if w.mode == faults.ModeWrite {
			_ = r.res.Increment(r.rwKey, l.Token(), 0) // judged by the resource's stats
		}
		select { // the work: until the lease ends or 30ms pass
		case <-l.Done():
		case <-time.After(30 * time.Millisecond):
		}
		hd.Released()
		_ = l.Release(ctx) // ErrLost / ErrUnavailable during the fault
		if done {
			return
		}
	}
}

func (r *sharedRun) acquire(ctx context.Context, w sharedWorker) (*core.Lease, error) {
	switch w.mode {
	case faults.ModePermit:
		return w.c.Semaphore(r.semKey, r.permits).Acquire(ctx, core.Wait(20*time.Second))
	case faults.ModeRead:
		return w.c.RWLock(r.rwKey).RLock(ctx, core.Wait(20*time.Second))
	default:
		return w.c.RWLock(r.rwKey).Lock(ctx, core.Wait(20*time.Second))
	}
}

// heal marks the fault undone: the rounds begun from now on must acquire.
func (r *sharedRun) heal() {
	r.live.Healed()
	close(r.healed)
}

// wait waits for every worker to finish and checks that each acquired
// `after` times once healed, the first within bound of the heal.
func (r *sharedRun) wait(t testing.TB, bound time.Duration) {
	t.Helper()
	r.wg.Wait()
	if err := r.live.Check(bound); err != nil {
		t.Error(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for w, n := range r.count {
		if n < r.after {
			t.Errorf("worker %s acquired %d times after the heal, want %d", w, n, r.after)
		}
	}
}

// checkShared judges holds of a semaphore of permits and of a read/write
// lock (told apart by Mode): never more than permits believed at once
// (Excess), never a writer beside another holder (RWConflicts), write
// tokens increasing in the order the writes began. what names the holds
// in the messages.
func checkShared(t testing.TB, what string, ivs []faults.Interval, permits int) {
	t.Helper()
	sem, rw, writes := sharedParts(ivs)
	if c := faults.Excess(sem, permits); len(c) > 0 {
		t.Errorf("%s: more than %d permits believed at once: %v", what, permits, c[0])
	}
	if o := faults.RWConflicts(rw); len(o) > 0 {
		t.Errorf("%s: a writer overlapped another holder: %v", what, o[0])
	}
	// Concurrent holders begin in any order, so tokens are checked where
	// holds exclude: the writes, in the order they began.
	if inv := faults.TokenInversions(writes); len(inv) > 0 {
		t.Errorf("%s: write tokens not increasing: %v", what, inv[0])
	}
}

// sharedParts splits holds into the semaphore's, the read/write lock's and,
// among these, the writes.
func sharedParts(ivs []faults.Interval) (sem, rw, writes []faults.Interval) {
	for _, iv := range ivs {
		switch iv.Mode {
		case faults.ModePermit:
			sem = append(sem, iv)
		case faults.ModeWrite:
			writes = append(writes, iv)
			fallthrough
		default:
			rw = append(rw, iv)
		}
	}
	return sem, rw, writes
}
