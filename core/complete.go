package core

import (
	"context"
	"errors"
	"fmt"
)

// Complete stores payload as the answer of the claim l (Client.Claim) and
// ends the claim, in one script fenced by the claim's token: retries of
// the key get payload (OutcomeReplayed) for the claim's Retention. An
// owner whose claim ended stores nothing: after its claim expired and was
// taken over, or was abandoned, Complete fails with an error matching
// ErrNotHeld and ErrLost, and the newer owner's record stays as it is.
//
// Complete is sent on a context of its own, detached from ctx (its
// values kept) and bounded by the release timeout: a request context
// cancelled as the handler returns does not drop the answer. go-redis
// may re-send it (MaxRetries): a re-sent completion of the same claim
// succeeds and changes nothing.
//
// The lease ends at once, as with Release (its Context is cancelled). A
// payload over MaxPayload is not stored: the claim is released (the next
// retry runs) and the error matches ErrTooLarge. After the claim's
// MaxHold nothing is stored either: the claim is released and the error
// matches ErrMaxHold. ErrUnavailable: Redis did not answer; the claim then
// expires at its TTL and a retry takes it over. Complete of a lease that
// is not a claim is ErrInvalidOption.
func (l *Lease) Complete(ctx context.Context, payload []byte) error {
	if l.names.kind != kindRecord {
		return fmt.Errorf("%w: Complete of %q, a lease that is not a claim (Client.Claim)", ErrInvalidOption, l.key)
	}
	c := l.c
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.releaseTimeout)
	defer cancel()
	if len(payload) > MaxPayload {
		err := fmt.Errorf("lockkit: complete %q: %w: %d bytes, the limit is %d (core.MaxPayload); the claim was released", l.key, ErrTooLarge, len(payload), MaxPayload)
		_ = l.Release(dctx)
		return err
	}
	l.checkDeadline()
	l.mu.Lock()
	overdue := l.state == stateOverdue
	l.mu.Unlock()
	if overdue {
		_ = l.Release(dctx)
		return fmt.Errorf("lockkit: complete %q: %w; the claim was released", l.key, ErrMaxHold)
	}
	if !l.finish(stateReleased, context.Canceled) {
		return l.endedErr()
	}
	ok, err := c.b.(*primary).complete(dctx, l.names, l.token, l.fence, payload, l.retention)
	switch {
	case errors.Is(err, ErrClosed): // the Client closed while the call waited to be sent
		err = ErrClosed
	case err != nil:
		err = unavailable("complete", l.key, err)
	case !ok:
		err = fmt.Errorf("lockkit: complete %q: %w: %w (its claim expired and was taken over, or was released)", l.key, ErrNotHeld, ErrLost)
	}
	c.obs.Released(l.ctx, l.info(), err)
	return err
}
