package lockview

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
)

// A waiter queued behind its Client's head reports the holders it met when
// its wait ends: an older sighting must not replace the newer one the
// head's own attempt reported, nor look recent.
func TestLastHolderIsNewestSeen(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	a := core.AcquireInfo{Key: "k", Start: time.Now()}
	newer := core.Holder{Owner: "B", Token: 2, Seen: time.Now()}
	older := core.Holder{Owner: "A", Token: 1, Seen: time.Now().Add(-30 * time.Second)}
	v.rec.Contended(context.Background(), a, newer, 1) // the head's own attempt
	v.rec.Contended(context.Background(), a, older, 0) // a queued waiter, at the end of its wait
	v.rec.AcquireEnd(context.Background(), a, core.AcquireResult{Outcome: core.OutcomeTimeout, Waited: time.Second})
	hk, _ := v.rec.hotKeys(time.Now(), true)
	if len(hk) != 1 || hk[0].LastHolder == nil {
		t.Fatalf("hot keys %+v", hk)
	}
	if lh := hk[0].LastHolder; lh.Owner != "B" || lh.Token != 2 {
		t.Errorf("last holder %s #%d, want B #2 (the newest sighting)", lh.Owner, lh.Token)
	}
	if hk[0].RefusedAttempts != 1 {
		t.Errorf("refused attempts %d, want 1 (a queued waiter's report is no attempt)", hk[0].RefusedAttempts)
	}
}
