package rpckey

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// Serve runs r, a unary call to procedure on ctx (the call's context),
// under its idempotency record, in the order the rule is decided in:
//
//	no key, not Required                 run(ctx), as without idempotency
//	a key missing (Required) or invalid  InvalidArgument
//	another call's fingerprint           FailedPrecondition (before in-progress)
//	the key's run in progress elsewhere  Aborted + retry hint (or, with Wait, its answer)
//	the key's run completed              its Answer, replay true (no run, no lock)
//	Redis unavailable                    Unavailable + retry hint (FailOpen: run(ctx))
//	claimed                              run under the claim, then:
//	  run failed (any code)              the claim abandoned (the retry runs again), run's error
//	  run answered                       the answer stored, fenced by the claim's token;
//	                                     a run whose claim ended or was taken over meanwhile
//	                                     stores nothing and is answered Aborted + retry hint
//
// run gets a context bound to the claim (core.Lease.Bind: it ends, with
// cause core.ErrLost, when the claim does), which carries it
// (ClaimFromContext, and core.LeaseFromContext until an inner lock's
// lease); it returns the handler's answer for the record. A nil Answer
// with a nil error is stored as nothing and abandons the claim.
//
// Serve returns the stored Answer and replay true for a replay, which the
// adapter sends with MetadataIdempotentReplayed; nil and run's error
// otherwise (the adapter then answers what run did), or the refusal.
// Only OK answers are stored, as HTTP stores answers below 500: an RPC
// error code does not say whether it is final, so every error lets the
// retry run.
func (x *Idempotency[R]) Serve(ctx context.Context, r R, procedure string, pushback Pushback, run func(ctx context.Context) (*Answer, error)) (replay *Answer, err error) {
	key, ok, err := x.clientKey(r)
	if err != nil {
		return nil, x.keyErr(ctx, r, procedure, err, pushback)
	}
	if !ok {
		_, err := run(ctx)
		return nil, err
	}
	rk, err := x.x.RecordKey(r, rpcMethod, procedure, key)
	if err != nil {
		return nil, x.keyErr(ctx, r, procedure, err, pushback)
	}
	fp, err := x.fingerprint(r, procedure)
	if err != nil {
		return nil, x.keyErr(ctx, r, procedure, err, pushback)
	}
	cr := x.claim
	cr.Name, cr.Fingerprint = Name(procedure), fp
	cl, err := x.c.Client.Claim(ctx, rk, cr)
	switch {
	case err == nil:
	case cr.FailsOpen(ctx, err):
		_, err := run(ctx)
		return nil, err
	case errors.Is(err, core.ErrFingerprint):
		return nil, x.c.Wire.Error(guard.CodeFailedPrecondition, core.ErrFingerprint.Error(), -1)
	case errors.Is(err, core.ErrNotAcquired):
		return nil, x.retry(guard.CodeAborted, guard.ErrIdempotencyInProgress, err, pushback)
	default:
		return nil, x.answer(ctx, &guard.Rejection{Outcome: core.Classify(ctx, err), Procedure: procedure, Err: err}, pushback)
	}
	if cl.Replayed() {
		a, err := decodeAnswer(cl.Payload)
		if err != nil {
			x.once.do(procedure+"\x00record", func() { x.misconfigured(r, procedure, err) })
			return nil, x.c.Wire.Error(guard.CodeInternal, "lockkit: the stored answer of "+procedure+" cannot be read", -1)
		}
		return a, nil
	}
	return nil, x.runClaimed(ctx, procedure, cl.Lease, run, pushback)
}

// runClaimed runs run under lease, the call's claim, and stores its answer
// or abandons the claim. A panic in run abandons it too.
func (x *Idempotency[R]) runClaimed(ctx context.Context, procedure string, lease *core.Lease, run func(context.Context) (*Answer, error), pushback Pushback) (err error) {
	done := false
	defer func() {
		if !done { // run failed or panicked: the retry runs again at once
			_ = lease.Release(context.WithoutCancel(ctx))
		}
	}()
	cctx, told := guard.WithClaimRun(ctx)
	bctx, cancel := lease.Bind(cctx)
	defer cancel()
	a, err := run(bctx)
	if err != nil {
		if ended := lease.Err(); ended != nil && ctx.Err() == nil && x.failedFor(err) {
			return x.retry(guard.CodeAborted, guard.ErrIdempotencyTakenOver, ended, pushback)
		}
		return err
	}
	if a == nil {
		return nil
	}
	if _, ended := told(); ended { // the lock inside ended under the handler: its work was not protected to its end
		x.notStored(ctx, procedure, errors.New("lockkit: the lock ended while the handler ran: its answer is not stored"))
		return nil // the answer stands; the claim is released, the retry runs again
	}
	payload, err := x.encode(a)
	if err != nil {
		x.notStored(ctx, procedure, err)
		return nil // the answer stands; the retry runs again
	}
	done = true
	switch err := lease.Complete(ctx, payload); {
	case err == nil:
	case errors.Is(err, core.ErrLost), errors.Is(err, core.ErrNotHeld), errors.Is(err, core.ErrMaxHold):
		// Another run may own the key: its answer is the one stored, and
		// the client fetches it rather than keep this one.
		x.notStored(ctx, procedure, err)
		return x.retry(guard.CodeAborted, guard.ErrIdempotencyTakenOver, err, pushback)
	default: // unavailable, too large: the claim expires or was released; the answer stands
		x.notStored(ctx, procedure, err)
	}
	return nil
}

// failedFor reports whether err, a run's error, says no more than that
// its context ended (no code of its own, or Canceled): the claim's end,
// as Policy.EndedDuring reads a lock's.
func (x *Idempotency[R]) failedFor(err error) bool {
	code, ok := x.c.Wire.Code(err)
	return !ok || code == guard.CodeCanceled
}

// clientKey is the client's key of r: ok false (nil error) when r carries
// none and none is required.
func (x *Idempotency[R]) clientKey(r R) (string, bool, error) {
	v, err := x.c.Key.Value(r)
	switch {
	case err != nil && errors.Is(err, core.ErrKeyConfig):
		return "", false, err
	case err != nil:
		return "", false, fmt.Errorf("%w: %s %q: %w", guard.ErrIdempotencyKey, x.c.Key.Source, x.c.Key.Name, err)
	case v == "" && x.c.Required:
		return "", false, fmt.Errorf("%w: this method requires one in %s %q", guard.ErrIdempotencyKeyMissing, x.c.Key.Source, x.c.Key.Name)
	case v == "":
		return "", false, nil
	}
	key, _, err := guard.ParseIdempotencyKey([]string{v})
	if err != nil {
		return "", false, fmt.Errorf("%s %q: %w", x.c.Key.Source, x.c.Key.Name, err)
	}
	return key, true, nil
}

// fingerprint is r's: guard.Fingerprint of the procedure and the request
// message marshalled deterministically (or the configured function's
// bytes). A change of the message's schema can change it (a field added
// with a default the client does not send does not; one the client fills
// does): a retry across such a deploy may be refused FailedPrecondition.
func (x *Idempotency[R]) fingerprint(r R, procedure string) (string, error) {
	var b []byte
	var err error
	if x.c.Fingerprint != nil {
		if b, err = x.c.Fingerprint(r); err != nil {
			return "", fmt.Errorf("%w: fingerprint: %w", core.ErrKeyConfig, err)
		}
	} else {
		m, ok := x.c.Msg(r).(proto.Message)
		if !ok {
			return "", fmt.Errorf("%w: the request message %T is not a proto message: give a fingerprint function", core.ErrKeyConfig, x.c.Msg(r))
		}
		if b, err = (proto.MarshalOptions{Deterministic: true}).Marshal(m); err != nil {
			return "", fmt.Errorf("%w: fingerprint: %w", core.ErrKeyConfig, err)
		}
	}
	return guard.Fingerprint(rpcMethod, procedure, "", "", b), nil
}

// keyErr answers a key, scope or fingerprint that could not be read:
// InvalidArgument, or Internal for the server's mistake (told once).
func (x *Idempotency[R]) keyErr(ctx context.Context, r R, procedure string, err error, pushback Pushback) error {
	if errors.Is(err, core.ErrKeyConfig) {
		x.once.do(procedure, func() { x.misconfigured(r, procedure, err) })
		return x.answer(ctx, &guard.Rejection{Outcome: core.OutcomeMisconfigured, Procedure: procedure, Err: err}, pushback)
	}
	return x.c.Wire.Error(guard.CodeInvalidArgument, "lockkit: "+err.Error(), -1)
}

func (x *Idempotency[R]) misconfigured(r R, procedure string, err error) {
	if x.c.Misconfigured != nil {
		x.c.Misconfigured(r, procedure, err)
	}
}

func (x *Idempotency[R]) notStored(ctx context.Context, procedure string, err error) {
	if x.c.NotStored != nil {
		x.c.NotStored(ctx, procedure, err)
	}
}

// retry is an answer of code with why's message and the retry hint (from
// cause), its pushback sent.
func (x *Idempotency[R]) retry(code guard.Code, why, cause error, pushback Pushback) error {
	d := guard.DefaultRetryAfter
	if x.c.RetryAfter != nil {
		d = max(x.c.RetryAfter(cause), 0)
	}
	err := x.c.Wire.Error(code, "lockkit: "+why.Error(), d)
	pushback(err, strconv.FormatInt(d.Milliseconds(), 10))
	return err
}

// answer is the Wire's answer to r, a refusal the lock's answers share
// (Unavailable, Canceled, Internal), with the retry hint and pushback.
func (x *Idempotency[R]) answer(ctx context.Context, r *guard.Rejection, pushback Pushback) error {
	if guard.Retryable(r.Outcome) {
		r.RetryAfter = guard.DefaultRetryAfter
		if x.c.RetryAfter != nil {
			r.RetryAfter = max(x.c.RetryAfter(r.Err), 0)
		}
	}
	err := x.c.Wire.Answer(ctx, r)
	if ri := firstRetryInfo(x.c.Wire.Details(err)); ri != nil {
		pushback(err, strconv.FormatInt(max(ri.GetRetryDelay().AsDuration(), 0).Milliseconds(), 10))
	}
	return err
}

// onceLog runs each key's function once.
type onceLog struct{ m sync.Map }

func (o *onceLog) do(key string, f func()) {
	if _, told := o.m.LoadOrStore(key, true); !told {
		f()
	}
}
