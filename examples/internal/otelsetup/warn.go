package otelsetup

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// maxWarnings bounds the warnings a process prints: a backend that is down
// fails every export, and one line each would bury the example's output.
const maxWarnings = 5

// warner is the otel.ErrorHandler Setup installs: each error is a
// "warning: ..." line, the first maxWarnings distinct ones; a warning
// already shown is not shown again (an exporter that cannot reach its
// backend says the same at every export) but counted, and close says how
// many were left out. After close nothing is written (the writer may be a
// test's buffer that is read once the example returns).
type warner struct {
	mu     sync.Mutex
	w      io.Writer
	n      int             // errors handled; n - len(shown) were left out
	shown  map[string]bool // the warnings written
	closed bool
}

func newWarner(w io.Writer) *warner { return &warner{w: w, shown: map[string]bool{}} }

// Handle implements otel.ErrorHandler.
func (h *warner) Handle(err error) {
	if err == nil {
		return
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.n++
	if h.shown[msg] || len(h.shown) == maxWarnings {
		return
	}
	h.shown[msg] = true
	fmt.Fprintf(h.w, "warning: telemetry: %s\n", msg)
}

// Count is how many errors were handled (shown or not).
func (h *warner) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// close says how many warnings were left out, and writes nothing after.
func (h *warner) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if omitted := h.n - len(h.shown); omitted > 0 { // repeats, and past maxWarnings
		fmt.Fprintf(h.w, "warning: telemetry: %d more export errors (repeats of the above, or past the first %d), not shown\n", omitted, maxWarnings)
	}
	h.closed = true
}
