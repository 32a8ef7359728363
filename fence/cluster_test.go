package fence_test

import (
	"fmt"
	"testing"

	"github.com/lockkit/lockkit/internal/redistest"
)

// On a Redis Cluster each record is one key, so a fenced write needs no
// hash tag: keys on every master, braced or not, are fenced, and each
// record lives on the master of its slot.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	s := storeOn(t, cl.NewClient())
	ctx := ctxT(t)

	perMaster := map[*redistest.Server][]string{}
	for i := 0; len(perMaster) < len(cl.Masters()) || i < 8; i++ {
		if i > 10000 {
			t.Fatal("no key found for every master")
		}
		for _, key := range []string{fmt.Sprintf("order:%d", i), fmt.Sprintf("{order:%d}:status", i)} {
			m := cl.Master(cl.Slot(key))
			perMaster[m] = append(perMaster[m], key)
		}
	}
	for m, keys := range perMaster {
		for _, key := range keys {
			mustSet(t, s, key, "new", 200)
			wantStale(t, s.Set(ctx, key, "old", 100), key, 100, 200)
			if e, ok := mustGet(t, s, key); !ok || e.Value != "new" || e.Token != 200 {
				t.Fatalf("%s: Get = %+v, %v", key, e, ok)
			}
			if f := raw(t, m.Client, key)["f"]; f != "200" {
				t.Fatalf("%s: the master of its slot stores f=%q, want 200", key, f)
			}
			if e, ok := mustClaim(t, s, key, 250); !ok || e.Value != "new" || e.Token != 200 {
				t.Fatalf("%s: Claim = %+v, %v", key, e, ok)
			}
			if f := raw(t, m.Client, key)["f"]; f != "250" {
				t.Fatalf("%s: after the claim the master of its slot stores f=%q, want 250", key, f)
			}
			if err := s.Delete(ctx, key, 300); err != nil {
				t.Fatalf("%s: Delete: %v", key, err)
			}
			wantStale(t, s.Set(ctx, key, "late", 200), key, 200, 300)
		}
	}
}
