package guard

import (
	"io"
	"net/http"
)

// BoundsIO reports whether h bounds the handler's client I/O (BeginIO): it
// holds a lock with a MaxHold. An adapter whose framework has its own
// answer writer (gin's) wraps it only then, as Writer does.
func (h *Hold) BoundsIO() bool { return h != nil && h.Lease != nil && h.maxHold > 0 }

// Body is a request's body read under h: each Read is client I/O
// (BeginIO), so a client that dribbles its body past the hold's MaxHold
// frees the lock at the bound, not when the handler returns. It is b
// itself when h has no MaxHold or holds nothing, so a route without
// MaxHold pays nothing.
func (h *Hold) Body(b io.ReadCloser) io.ReadCloser {
	if !h.BoundsIO() || b == nil || b == http.NoBody {
		return b
	}
	return &holdBody{ReadCloser: b, h: h}
}

type holdBody struct {
	io.ReadCloser
	h *Hold
}

func (b *holdBody) Read(p []byte) (n int, err error) {
	b.h.BeginIO()
	defer b.h.EndIO()
	return b.ReadCloser.Read(p)
}

// Writer is a request's answer written under h: each Write and Flush is
// client I/O (Send), so a client that stops reading a large answer past the
// hold's MaxHold frees the lock at the bound. It keeps w's Flush and
// unwraps to w (http.ResponseController reaches w's deadlines and
// hijacking through it). It is w itself when h has no MaxHold or holds
// nothing.
func (h *Hold) Writer(w http.ResponseWriter) http.ResponseWriter {
	if !h.BoundsIO() {
		return w
	}
	return &holdWriter{ResponseWriter: w, h: h}
}

type holdWriter struct {
	http.ResponseWriter
	h *Hold
}

func (w *holdWriter) Write(p []byte) (n int, err error) {
	w.h.BeginIO()
	defer w.h.EndIO()
	return w.ResponseWriter.Write(p)
}

func (w *holdWriter) Flush() {
	w.h.BeginIO()
	defer w.h.EndIO()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *holdWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
