package guard

import "net/http"

// Completion is how a handler's run under an idempotency claim ended: what
// Stores decides on, filled by the adapter when the handler returned (or
// panicked).
type Completion struct {
	// Began is true once the handler was called. The middleware's own
	// answers (400, 409, 413, 422, 503, and a lock's refusal on the same
	// route) come before it and are never stored: they describe the
	// attempt, not the request's result.
	Began bool
	// Status is the answer's status.
	Status int
	// Ended is true when the claim's lease ended under the handler, lost
	// or held for its MaxHold (Hold.Ended): another request may own the
	// record by now, and the handler's work was not protected to its end.
	Ended bool
}

// Stores reports whether the answer of a run that ended as c is stored
// and replayed to the key's retries. If not, the record is released: the
// retry runs again.
//
//	handler not begun (the middleware's own answer)  never
//	a lease lost or held for MaxHold                  never (a panic is never asked: Serve abandons)
//	status below 200 (none final)                     never
//	200–499 but 408, 425, 429                         stored
//	408, 425, 429, 5xx                                only with StoreEveryAnswer
//
// 408, 425 and 429 say "retry": storing them would answer every retry the
// same refusal for the retention. A 5xx is most often transient (a
// dependency down) and is only stored when the route says a run that began
// must never run again (StoreEveryAnswer, Stripe's rule).
func (x *Idempotency[R]) Stores(c Completion) bool {
	switch {
	case !c.Began || c.Ended || c.Status < 200 || c.Status > 999:
		return false
	case x.cfg.StoreEveryAnswer:
		return true
	}
	return StoredStatus(c.Status)
}

// StoredStatus reports whether an answer of status is stored by default:
// a final status below 500 but 408, 425 and 429.
func StoredStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return status >= 200 && status < 500
}
