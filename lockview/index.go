package lockview

import (
	"html/template"
	"net/http"
	"time"

	"github.com/lockkit/lockkit/core"
)

// Link is one View on an index page: where its Handler is mounted,
// relative to the index (such as "gin/" beside an index at /debug/locks/),
// and the View and Client it shows, for the index's summary.
type Link struct {
	Path   string
	View   *View
	Client *core.Client
}

// Index is the index page's data, and its JSON document.
type Index struct {
	Time  time.Time  `json:"time"`
	Views []IndexRow `json:"views"`
}

// IndexRow sums up one View: its Client's owner, the locks it holds and
// the ones its callers wait for (and how many callers), the contended keys
// of its window, and its losses and Redis errors since it began.
type IndexRow struct {
	Path          string `json:"path"`
	JSON          string `json:"json"`
	Owner         string `json:"owner"`
	Held          int    `json:"held"`
	Awaited       int    `json:"awaited"`
	Waiters       int    `json:"waiters"`
	ContendedKeys int    `json:"contended_keys"`
	LossesTotal   uint64 `json:"losses_total"`
	ErrorsTotal   uint64 `json:"errors_total"`
}

// NewIndex returns a handler of a page linking several Views of one
// process, one per Client (a process on several Redis deployments, or the
// demo's replicas), each with a summary; styled as the views, it is JSON
// (type Index) with ?format=json or an Accept header asking for
// application/json and not text/html, like them. A service with one
// Client needs no index: mount its View's Handler.
//
// GET and HEAD only (405 otherwise); it reads only the query, so it works
// under any path, the links being relative to it.
func NewIndex(links ...Link) http.Handler { return index(links) }

type index []Link

func (ix index) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "lockview: read-only, GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	asJSON, ok := wantsJSON(r.URL.Query().Get("format"), r.Header.Get("Accept"))
	if !ok {
		http.Error(w, "lockview: format is html or json", http.StatusBadRequest)
		return
	}
	now := time.Now()
	d := Index{Time: now, Views: make([]IndexRow, 0, len(ix))}
	for _, l := range ix {
		row := IndexRow{Path: l.Path, JSON: l.Path + "?format=json", Owner: l.Client.Owner()}
		for _, s := range l.Client.Locks() {
			if s.Held {
				row.Held++
			} else {
				row.Awaited++
			}
			row.Waiters += s.Waiters
		}
		row.ContendedKeys = l.View.rec.contendedKeys(now)
		row.LossesTotal, row.ErrorsTotal = l.View.rec.totals()
		d.Views = append(d.Views, row)
	}
	if asJSON {
		writeJSON(w, &d)
		return
	}
	writeHTML(w, indexPage, &d)
}

var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lock views</title>
` + style + `</head><body>
<h1>Lock views</h1>
<div class="meta">updated {{.Time.Format "15:04:05.000"}} · <a href="?format=json">JSON</a></div>
<h2>One view per lock client of this process</h2>
<table><thead><tr><th>view</th><th>owner</th><th class="n">held</th><th class="n">awaited</th><th class="n">waiting callers</th><th class="n">contended keys</th><th class="n">losses</th><th class="n">Redis errors</th><th>JSON</th></tr></thead><tbody>
{{range .Views}}<tr class="view"><td><a href="{{.Path}}">{{.Path}}</a></td><td><code>{{.Owner}}</code></td><td class="n">{{.Held}}</td><td class="n">{{.Awaited}}</td><td class="n">{{.Waiters}}</td><td class="n">{{.ContendedKeys}}</td><td class="n">{{.LossesTotal}}</td><td class="n">{{.ErrorsTotal}}</td><td><a href="{{.JSON}}">JSON</a></td></tr>
{{else}}<tr><td colspan="9" class="empty">none</td></tr>{{end}}
</tbody></table>
</body></html>
`))
