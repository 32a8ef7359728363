package fence_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// The point of the package, end to end with core: holder A loses its lock,
// B takes it with a newer token and writes, and A's late write, carrying
// A's older token, is refused by the store. The lock alone let it through:
// A never asked the lock again before writing.
func TestLateWriteOfALostLeaseRefused(t *testing.T) {
	t.Run("ForceRelease", func(t *testing.T) {
		srv := redistest.Start(t)
		a := testkit.Client(t, srv.NewClient(), core.WithOwner("A"))
		b := testkit.Client(t, srv.NewClient(), core.WithOwner("B"))
		store := storeOn(t, srv.NewClient())
		ctx := ctxT(t)

		la, err := a.Acquire(ctx, "order:1")
		if err != nil {
			t.Fatal(err)
		}
		mustSet(t, store, "orders:1", "A-1", la.Token())

		if ok, err := b.ForceRelease(ctx, "order:1"); err != nil || !ok {
			t.Fatalf("ForceRelease = %v, %v", ok, err)
		}
		lb, err := b.Acquire(ctx, "order:1", core.Wait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = lb.Release(context.Background()) }()
		if lb.Token() <= la.Token() {
			t.Fatalf("B's token %d is not above A's %d", lb.Token(), la.Token())
		}
		mustSet(t, store, "orders:1", "B-1", lb.Token())

		wantStale(t, store.Set(ctx, "orders:1", "A-late", la.Token()), "orders:1", la.Token(), lb.Token())
		if e, _ := mustGet(t, store, "orders:1"); e.Value != "B-1" || e.Token != lb.Token() {
			t.Fatalf("record %+v, want B's write", e)
		}
	})

	// A is cut off (a partition, or a pause) while its write is in flight:
	// its lease ends at its deadline, the lock expires on the server, B
	// acquires and writes; then the network heals and A's held write lands.
	t.Run("TTLExpiryWhileCutOff", func(t *testing.T) {
		c := newCutOff(t)
		ctx := ctxT(t)
		la, err := c.a.Acquire(ctx, "order:1", core.TTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		mustSet(t, c.storeA, "orders:1", "A-1", la.Token())

		late := c.holdWrite(t, func(ctx context.Context) error {
			return c.storeA.Set(ctx, "orders:1", "A-late", la.Token())
		})
		lb := c.handOver(t, la)
		mustSet(t, c.storeB, "orders:1", "B-1", lb.Token())

		c.heal()
		err = testkit.Recv(t, late, 30*time.Second, "A's late write to land")
		wantStale(t, err, "orders:1", la.Token(), lb.Token())
		if e, _ := mustGet(t, c.storeB, "orders:1"); e.Value != "B-1" || e.Token != lb.Token() {
			t.Fatalf("record %+v, want B's write", e)
		}
	})
}
