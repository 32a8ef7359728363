package lockview_test

import (
	"log"
	"net/http"

	"github.com/lockkit/lockkit/core"
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
