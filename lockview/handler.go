package lockview

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"strings"

	"github.com/lockkit/lockkit/core"
)

// Handler serves the view of c: the HTML page, or the same data as JSON
// (?format=json, or an Accept header that asks for application/json and not
// for text/html). It reads only the query, never the path, so it answers
// under whatever path it is mounted at, with or without http.StripPrefix;
// its links and form are relative to the page itself.
//
// GET and HEAD only (405 otherwise). The hot keys are the contended ones
// unless ?keys=all. ?inspect=KEY looks up KEY's holder when WithInspect
// is set and is 404 otherwise.
func (v *View) Handler(c *core.Client) http.Handler {
	return &handler{v: v, c: c, insp: newInspector(&v.cfg)}
}

type handler struct {
	v    *View
	c    *core.Client
	insp *inspector
}

// Security headers of every answer: nothing cached, nothing sniffed,
// no script, no outside resource, no framing, no referrer leaking the URL
// (an inspected key is in it).
func secure(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "lockview: read-only, GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	asJSON, ok := wantsJSON(q.Get("format"), r.Header.Get("Accept"))
	if !ok {
		http.Error(w, "lockview: format is html or json", http.StatusBadRequest)
		return
	}
	var allHot bool
	switch q.Get("keys") {
	case "", "contended":
	case "all":
		allHot = true
	default:
		http.Error(w, "lockview: keys is contended or all", http.StatusBadRequest)
		return
	}
	var inspected *Inspected
	if q.Has("inspect") {
		if !h.v.cfg.inspect {
			http.Error(w, "lockview: inspect is off (lockview.WithInspect)", http.StatusNotFound)
			return
		}
		res, status, msg := h.insp.inspect(r.Context(), h.c, q.Get("inspect"))
		if status != http.StatusOK {
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			http.Error(w, msg, status)
			return
		}
		inspected = res
	}
	s := h.v.snapshot(h.c, allHot)
	s.Inspect = inspected
	if asJSON {
		writeJSON(w, &s)
		return
	}
	writeHTML(w, page, h.v.pageData(&s))
}

// writeJSON answers v as JSON, or 500 if it does not encode.
func writeJSON(w http.ResponseWriter, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, "lockview: encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// writeHTML answers t executed on data, or 500 if it fails (nothing of a
// half-rendered page is sent).
func writeHTML(w http.ResponseWriter, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		http.Error(w, "lockview: render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// wantsJSON decides the format: ?format= first, then Accept (JSON only
// when asked for and HTML not, so a browser gets the page).
func wantsJSON(format, accept string) (asJSON, ok bool) {
	switch format {
	case "json":
		return true, true
	case "html":
		return false, true
	case "":
		return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html"), true
	}
	return false, false
}
