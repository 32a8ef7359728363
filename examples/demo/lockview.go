package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lockkit/lockkit/examples/internal/serve"
	"github.com/lockkit/lockkit/lockview"
)

// lockViewPath is where the demo mounts each replica's lock view:
// lockViewPath + "gin/", "echo/", "grpc/".
const lockViewPath = "/debug/locks/"

// serveLockViews serves each replica's lock view (lockview, keys shown
// raw: the demo's keys name made-up orders) on addr, with an index
// (lockview.NewIndex: a page, or JSON with ?format=json) linking them,
// while the demo runs. A service in production would mount
// its one view next to its other debug endpoints; the demo's
// replicas share a process, so they share a debug server. It returns the
// index's URL and a stop function.
func serveLockViews(addr string, reps []*replica) (url string, stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("lock view: %w", err)
	}
	mux := http.NewServeMux()
	links := make([]lockview.Link, 0, len(reps))
	for _, r := range reps {
		mux.Handle(lockViewPath+r.name+"/", r.view.Handler(r.lock))
		links = append(links, lockview.Link{Path: r.name + "/", View: r.view, Client: r.lock})
	}
	mux.Handle(lockViewPath+"{$}", lockview.NewIndex(links...))
	s := serve.Start(lis, mux) // if the listener fails, the view is gone and the demo goes on
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	}
	return "http://" + lis.Addr().String() + lockViewPath, stop, nil
}
