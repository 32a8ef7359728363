package guard

import (
	"errors"
	"strings"

	"github.com/lockkit/lockkit/core"
)

// sentences are what the default answer to each outcome that stops a
// request or a call says: an HTTP answer's problem detail (ProblemFor) and,
// after "lockkit: ", an RPC answer's message (Rejection.Message), one
// table so the two cannot drift apart; {noun} is "request" or "call". None
// names the holder: its owner and metadata may be another tenant's. A bad
// key's answer says its error instead, and a misconfigured one is worded
// by each protocol (HTTP names no server detail, RPC names the method).
var sentences = [...]string{
	core.OutcomeContended:   "the resource is locked by another {noun}; retry later",
	core.OutcomeTimeout:     "the resource is locked by another {noun}; retry later",
	core.OutcomeLimited:     "too many {noun}s for the resource at once; retry later",
	core.OutcomeUnavailable: "the lock service is unavailable",
	core.OutcomeDeadline:    "the {noun}'s deadline passed while waiting for the lock",
	core.OutcomeClosed:      "the service is shutting down",
	core.OutcomeCanceled:    "{noun} cancelled while waiting for the lock",
	core.OutcomeLost:        "the lock on the resource was lost while the {noun} ran; retry later",
}

// maxHoldSentence is OutcomeLost's sentence when the lease ended at its
// MaxHold (core.ErrMaxHold) rather than being lost.
const maxHoldSentence = "the {noun} held its lock for its maximum hold"

// sentence is the sentence of outcome o with error err for noun, "" when
// the table has none.
func sentence(o core.Outcome, err error, noun string) string {
	if int(o) >= len(sentences) {
		return ""
	}
	s := sentences[o]
	if o == core.OutcomeLost && errors.Is(err, core.ErrMaxHold) {
		s = maxHoldSentence
	}
	return strings.ReplaceAll(s, "{noun}", noun)
}
