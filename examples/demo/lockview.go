package main

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"time"

	"github.com/lockkit/lockkit/examples/internal/serve"
)

// lockViewPath is where the demo mounts each replica's lock view:
// lockViewPath + "gin/", "echo/", "grpc/".
const lockViewPath = "/debug/locks/"

// serveLockViews serves each replica's lock view (lockview, keys shown
// raw: the demo's keys name made-up orders) on addr, with an index page
// linking them, while the demo runs. A service in production would mount
// its one view next to its other debug endpoints; the demo's three
// replicas share a process, so they share a debug server. It returns the
// index's URL and a stop function.
func serveLockViews(addr string, reps []*replica) (url string, stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("lock view: %w", err)
	}
	mux := http.NewServeMux()
	names := make([]string, 0, len(reps))
	for _, r := range reps {
		mux.Handle(lockViewPath+r.name+"/", r.view.Handler(r.lock))
		names = append(names, r.name)
	}
	mux.HandleFunc("GET "+lockViewPath+"{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = lockViewIndex.Execute(w, names)
	})
	srv := serve.Default.HTTPServer(mux)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed: the view is gone, the demo goes on
		}
	}()
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return "http://" + lis.Addr().String() + lockViewPath, stop, nil
}

var lockViewIndex = template.Must(template.New("index").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>lockkit demo: lock views</title></head>
<body><h1>Lock views of the demo's replicas</h1><ul>
{{range .}}<li><a href="{{.}}/">{{.}}</a> (<a href="{{.}}/?format=json">JSON</a>)</li>
{{end}}</ul></body></html>
`))
