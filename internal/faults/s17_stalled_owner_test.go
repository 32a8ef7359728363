package faults_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/fence"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// An owner stalled past its lease with its fenced write in flight: its
// connections (to the records' Redis and to the store) freeze after its
// read, as when its host is cut off; its lease ends at its deadline; a
// retry on another replica takes the record over, reads, applies and
// completes; then the network heals and the stalled write lands: the
// store refuses it, the payment is applied once and the stored answer is
// the new owner's. The control handler (Get and a plain HSET) must be
// caught by the Ledger: its late write is a second application.
func TestS17StalledOwnerWriteRefused(t *testing.T) {
	for _, mode := range []payMode{payFenced, payUnfenced} {
		t.Run(string(mode), func(t *testing.T) {
			const ttl = 500 * time.Millisecond
			const id = 5
			p := newPayments(t, mode, ttl, id)
			lock := redistest.Start(t)
			pxLock, pxStore := newProxy(t, lock.Addr()), newProxy(t, p.store.Addr())
			a := p.replica("A", via(lock, pxLock.Addr()), pxStore.Addr())
			b := p.replica("B", lock.NewClient(), "")
			ctx := testkit.Context(t, 30*time.Second)

			cl, err := a.claim(ctx, id, payFingerprint(id))
			if err != nil || cl.Lease == nil {
				t.Fatalf("A's claim: %+v, %v", cl, err)
			}
			type served struct {
				answered bool
				err      error
			}
			aDone, stalled := make(chan served, 1), make(chan int64, 1)
			go func() {
				_, answered, err := p.serve(ctx, a, id, cl, func() {
					sent := pxStore.Stats().Upstream
					pxLock.Pause()
					pxStore.Pause()
					stalled <- sent
				})
				aDone <- served{answered, err}
			}()
			sent := recv(t, stalled, 10*time.Second, "A's read")
			testkit.WaitFor(t, 5*time.Second, "A's write in flight", func() bool { return pxStore.Stats().Upstream > sent })
			recv(t, cl.Lease.Done(), 10*time.Second, "A's lease to end while it is cut off")

			next, _, attempts := retryUntilClaimed(t, ctx, []*replica{b}, id, 3)
			if !next.TakenOver || next.Token <= cl.Token {
				t.Fatalf("B's claim %+v after A's token %d: want it taken over with a larger token", next, cl.Token)
			}
			answer, answered, err := p.serve(ctx, b, id, next, nil)
			if !answered || err != nil {
				t.Fatalf("B's handler: answered %v, %v", answered, err)
			}
			pxLock.Resume()
			pxStore.Resume()
			late := recv(t, aDone, 25*time.Second, "A's write to come back")

			if got := storedAnswer(ctx, lock.Client, id); got != answer {
				t.Errorf("stored answer %q, want the new owner's %q", got, answer)
			}
			notOnce := p.ledger.NotOnce()
			if mode == payFenced {
				if late.answered || !errors.Is(late.err, fence.ErrStale) {
					t.Errorf("A's late write: answered %v, %v; want it refused (ErrStale)", late.answered, late.err)
				}
				p.verdict()
			} else if !late.answered || !slices.ContainsFunc(notOnce, func(s string) bool { return strings.HasPrefix(s, payKey(id)+" applied 2 times") }) {
				t.Errorf("control: A's late write answered %v, ledger %q; want it accepted and the payment caught applied twice", late.answered, notOnce)
			}
			t.Logf("%s: taken over at attempt %d; A's late write: %v; ledger %v", mode, attempts, late.err, p.ledger.Entry(payKey(id)))
		})
	}
}

// An owner stalled past its lease with its answer in flight: it applied
// the payment, its connection to the records' Redis froze, and its
// Complete was sent into it while its lease still looked held. A retry
// takes the record over, finds the payment applied (it applies nothing)
// and completes; then the stalled completion lands and is refused (an
// error matching ErrNotHeld and ErrLost). Read back with a plain client,
// the record holds the new owner's answer, and retries replay it.
func TestS17StalledOwnerAnswerRefused(t *testing.T) {
	const ttl = 500 * time.Millisecond
	const id = 6
	p := newPayments(t, payFenced, ttl, id)
	lock := redistest.Start(t)
	pxLock := newProxy(t, lock.Addr())
	a := p.replica("A", via(lock, pxLock.Addr()), "", core.WithReleaseTimeout(20*time.Second))
	b := p.replica("B", lock.NewClient(), "")
	ctx := testkit.Context(t, 30*time.Second)

	cl, err := a.claim(ctx, id, payFingerprint(id))
	if err != nil || cl.Lease == nil {
		t.Fatalf("A's claim: %+v, %v", cl, err)
	}
	hold := p.hist.Begin(a.name, cl.Lease)
	p.ledger.Ran(payKey(id), false)
	if applied, err := p.apply(ctx, cl.Lease.Context(), a, id, cl.Token, nil); !applied || err != nil {
		t.Fatalf("A's write: %v, %v", applied, err)
	}
	p.ledger.Applied(payKey(id))
	hold.Released()
	sent := pxLock.Stats().Upstream
	pxLock.Pause()
	aDone := make(chan error, 1)
	go func() { aDone <- cl.Lease.Complete(ctx, []byte(payAnswer(id, cl.Token))) }()
	testkit.WaitFor(t, 5*time.Second, "A's answer in flight", func() bool { return pxLock.Stats().Upstream > sent })

	next, _, attempts := retryUntilClaimed(t, ctx, []*replica{b}, id, 3)
	if !next.TakenOver || next.Token <= cl.Token {
		t.Fatalf("B's claim %+v after A's token %d: want it taken over with a larger token", next, cl.Token)
	}
	answer, answered, err := p.serve(ctx, b, id, next, nil)
	if !answered || err != nil {
		t.Fatalf("B's handler: answered %v, %v", answered, err)
	}
	if e := p.ledger.Entry(payKey(id)); e.Found != 1 {
		t.Errorf("ledger %v: B must find A's payment", e)
	}
	pxLock.Resume()
	late := recv(t, aDone, 25*time.Second, "A's answer to come back")
	if !errors.Is(late, core.ErrNotHeld) || !errors.Is(late, core.ErrLost) {
		t.Errorf("A's late Complete: %v, want ErrNotHeld and ErrLost", late)
	}
	if got := storedAnswer(ctx, lock.Client, id); got != answer {
		t.Errorf("stored answer %q, want the new owner's %q", got, answer)
	}
	for _, r := range []*replica{a, b} {
		again, err := r.claim(ctx, id, payFingerprint(id))
		if err != nil || string(again.Payload) != answer {
			t.Errorf("retry on %s: %+v, %v; want the replay of %q", r.name, again, err, answer)
		}
	}
	t.Logf("taken over at attempt %d; A's late Complete: %v", attempts, late)
	p.verdict()
}
