package lockview

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/lockkit/lockkit/core"
)

// inspectTimeout bounds one lookup (one Redis round trip).
const inspectTimeout = 2 * time.Second

// inspector bounds the lookups of one Handler: a semaphore of concurrency
// slots and a token bucket of the same size refilled one per interval.
// Over either limit a lookup is refused at once (429), never queued.
type inspector struct {
	cfg   *config
	slots chan struct{}

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newInspector(cfg *config) *inspector {
	return &inspector{cfg: cfg, slots: make(chan struct{}, cfg.inspectPar), tokens: float64(cfg.inspectPar)}
}

// allow takes a token from the bucket.
func (in *inspector) allow(now time.Time) bool {
	if in.cfg.inspectPer == 0 {
		return true
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.last.IsZero() {
		in.tokens = min(float64(in.cfg.inspectPar), in.tokens+float64(now.Sub(in.last))/float64(in.cfg.inspectPer))
	}
	in.last = now
	if in.tokens < 1 {
		return false
	}
	in.tokens--
	return true
}

// inspect looks key up; status is the HTTP status (200 with a result, or
// the refusal and its message). Redis failing is a result (with Error), as
// the page is still worth showing.
func (in *inspector) inspect(ctx context.Context, c *core.Client, key string) (*Inspected, int, string) {
	// Bad keys are refused before they cost a lookup slot or a token.
	if key == "" {
		return nil, http.StatusBadRequest, "lockview: inspect: empty key"
	}
	if len(key) > in.cfg.maxKeyLen {
		return nil, http.StatusBadRequest, fmt.Sprintf("lockview: inspect: key is %d bytes, the limit is %d", len(key), in.cfg.maxKeyLen)
	}
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	default:
		return nil, http.StatusTooManyRequests, "lockview: inspect: too many lookups at once"
	}
	if !in.allow(time.Now()) {
		return nil, http.StatusTooManyRequests, "lockview: inspect: too many lookups, slow down"
	}
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	h, held, err := c.Inspect(ctx, key)
	res := &Inspected{Key: in.cfg.show(key)}
	switch {
	case errors.Is(err, core.ErrInvalidKey):
		return nil, http.StatusBadRequest, "lockview: inspect: " + in.cfg.scrub(err.Error(), key)
	case err != nil:
		res.Error = in.cfg.scrub(err.Error(), key)
	case held:
		res.Held, res.Owner, res.Metadata, res.TTL, res.Token = true, h.Owner, h.Metadata, ms(h.TTL), h.Token
	}
	return res, http.StatusOK, ""
}
