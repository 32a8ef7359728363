package lockview_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/locktest"
	"github.com/lockkit/lockkit/lockview"
	"github.com/lockkit/lockkit/otellock"
	"github.com/redis/go-redis/v9"
)

// The View's Observer goes into the Client (next to otellock's), its
// Handler on a debug path; the page then is /debug/locks/, the JSON
// /debug/locks/?format=json.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	v, err := lockview.New() // keys hashed, Inspect off
	if err != nil {
		log.Fatal(err)
	}
	client, err := core.New(rdb, core.WithObserver(core.Observers(otellock.New(), v.Observer())))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	mux := http.NewServeMux()
	mux.Handle("/debug/locks/", v.Handler(client)) // any path; StripPrefix or not
	_ = http.ListenAndServe("127.0.0.1:6060", mux)
}

// The View on a Client, its page mounted on a mux: here the JSON of a
// moment when this process holds order:42.
func ExampleView_Handler() {
	srv, err := locktest.Start() // an embedded Redis, for the example
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()

	v, err := lockview.New() // keys hashed; lockview.WithKeys(lockview.KeyRaw) shows them
	if err != nil {
		panic(err)
	}
	locks, err := core.New(rdb, core.WithOwner("replica-1"),
		core.WithObserver(core.Observers(otellock.New(), v.Observer())))
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	mux := http.NewServeMux()
	mux.Handle("/debug/locks/", v.Handler(locks)) // any path: it reads only the query string

	ctx := context.Background()
	lease, _ := locks.Acquire(ctx, "order:42", core.Name("POST /orders/:id/pay"))
	defer lease.Release(ctx)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/locks/?format=json", nil))
	var s lockview.Snapshot
	_ = json.Unmarshal(w.Body.Bytes(), &s)
	fmt.Println(s.Owner, len(s.Locks), s.Locks[0].Held, s.Locks[0].Key == core.HashKey("order:42"))
	// Output: replica-1 1 true true
}

// One View per Client, and an index of them: a process with two Redis
// deployments, or the demo's three replicas. Each View's Observer goes
// into its own Client.
func ExampleNewIndex() {
	srv, err := locktest.Start() // one embedded Redis here; each Client may have its own
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	viewA, _ := lockview.New()
	viewB, _ := lockview.New()
	clientA, err := core.New(srv.Redis(), core.WithOwner("a"), core.WithObserver(viewA.Observer()))
	if err != nil {
		panic(err)
	}
	defer clientA.Close()
	clientB, err := core.New(srv.Redis(), core.WithOwner("b"), core.WithObserver(viewB.Observer()))
	if err != nil {
		panic(err)
	}
	defer clientB.Close()

	mux := http.NewServeMux()
	mux.Handle("/debug/locks/a/", viewA.Handler(clientA))
	mux.Handle("/debug/locks/b/", viewB.Handler(clientB))
	mux.Handle("/debug/locks/{$}", lockview.NewIndex(
		lockview.Link{Path: "a/", View: viewA, Client: clientA},
		lockview.Link{Path: "b/", View: viewB, Client: clientB}))

	// a holds order:42; b tries it, and its View has a contended key.
	ctx := context.Background()
	lease, _ := clientA.Acquire(ctx, "order:42")
	defer lease.Release(ctx)
	_, err = clientB.TryAcquire(ctx, "order:42")
	fmt.Println(errors.Is(err, core.ErrNotAcquired))

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/locks/?format=json", nil))
	var ix lockview.Index
	_ = json.Unmarshal(w.Body.Bytes(), &ix)
	for _, v := range ix.Views {
		fmt.Println(v.Path, v.Owner, "held", v.Held, "contended keys", v.ContendedKeys)
	}
	// Output:
	// true
	// a/ a held 1 contended keys 0
	// b/ b held 0 contended keys 1
}
