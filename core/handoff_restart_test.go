package core_test

import (
	"os"
	"testing"
	"time"

	"github.com/lockkit/lockkit/internal/testkit"
)

// A hand-off refused because the lock's Redis restarted empty: the holder
// (taken before the restart) releases to the first waiter of its Client
// while another Client holds the key on the new server, and that waiter
// hands on to a second one before the reply (the proxy is paused, so no
// script reaches Redis yet). Once the proxy resumes, Redis refuses the
// first hand-off (the holder's token is not the owner there). At that
// reply the second waiter, still holding, learns it: its context ends with
// cause ErrLost; both Releases of the line say ErrNotHeld; the second
// hand-off is never sent (Redis ran one hand-off script); a third waiter,
// queued behind the line before the reply, is not handed the lock: it
// waits for the other Client, and then takes the lock with a larger token
// than that Client's. The other Client's lease is untouched throughout.
func TestHandoffRefusedAfterRestartEndsTheLine(t *testing.T) {
	const key = "restarted"
	rig := newHandoffRig(t, key)
	ctx := rig.ctx
	second := rig.queueSecond(t)
	third := rig.queueSecond(t)

	rig.srv.Kill()
	rig.srv.Restart(false)
	other := newClient(t, rig.srv) // another process, straight to the new server
	ol, err := other.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("another Client on the restarted server: %v", err)
	}
	// The new server's script cache is empty: load the hand-off script, so
	// that each hand-off that reaches it is one EVALSHA to count.
	src, err := os.ReadFile("scripts/handoff.lua")
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.srv.Client.ScriptLoad(ctx, string(src)).Err(); err != nil {
		t.Fatal(err)
	}
	rig.refusedLine(t, second, scriptRuns(t, rig.srv, "handoff.lua"))

	// The third waiter asks Redis, is refused, and waits: nothing of the
	// line is handed to it.
	testkit.WaitFor(t, 10*time.Second, "the third waiter refused by the new server", func() bool {
		ls := rig.c.Locks()
		return len(ls) == 1 && !ls[0].Held && ls[0].Holder.Token == ol.Token()
	})
	select {
	case w := <-third:
		t.Fatalf("third waiter got %v (%v) while the other Client holds", w.l, w.err)
	default:
	}
	if err := ol.Err(); err != nil {
		t.Fatalf("the other Client's lease: %v", err)
	}
	if err := ol.Release(ctx); err != nil {
		t.Fatalf("the other Client's Release: %v", err)
	}
	w := testkit.Recv(t, third, 10*time.Second, "the third waiter after the other Client released")
	if w.err != nil {
		t.Fatal(w.err)
	}
	if w.l.Token() <= ol.Token() {
		t.Fatalf("third waiter's token %d, not above the other Client's %d", w.l.Token(), ol.Token())
	}
	if err := w.l.Release(ctx); err != nil {
		t.Fatalf("third waiter's Release: %v", err)
	}
}
