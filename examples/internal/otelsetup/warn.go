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
// "warning: ..." line, the first maxWarnings of them, then one line saying
// the rest are not shown. After close nothing is written (the writer may
// be a test's buffer that is read once the example returns).
type warner struct {
	mu     sync.Mutex
	w      io.Writer
	n      int
	closed bool
}

func newWarner(w io.Writer) *warner { return &warner{w: w} }

// Handle implements otel.ErrorHandler.
func (h *warner) Handle(err error) {
	if err == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.n++
	switch {
	case h.n <= maxWarnings:
		fmt.Fprintf(h.w, "warning: telemetry: %s\n", strings.Join(strings.Fields(err.Error()), " "))
	case h.n == maxWarnings+1:
		fmt.Fprintln(h.w, "warning: telemetry: more export errors, not shown")
	}
}

// Count is how many errors were handled (shown or not).
func (h *warner) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *warner) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
}
