package conformance

import "testing"

// Run runs every scenario against adapter a (both replicas served by a).
func Run(t *testing.T, a Adapter) {
	for _, sc := range []struct {
		name string
		run  func(*testing.T, Adapter, Adapter)
	}{
		{"exclusion across replicas and routes", Exclusion},
		{"different keys run in parallel", Parallel},
		{"no-wait duplicates get 409", NoWait},
		{"redis killed", RedisDown},
		{"redis frozen: unavailable, not contended", RedisFrozen},
		{"missing key part is 400", BadKey},
		{"a control character from any source is 400", ControlChars},
		{"unknown route param is 500", Misconfigured},
		{"hostile values never collide", HostileValues},
		{"client hangs up while holding", ClientHangsUp},
		{"client gone while waiting", ClientGoneWhileWaiting},
		{"panicking handler frees the lock", PanicFreesLock},
		{"handler outlives 3x TTL then loses the lock", OutlivesTTL},
		{"request deadline while waiting is 503", Deadline},
		{"fencing token header", TokenHeader},
		{"one id, any spelling, one key", SpellingsExclude},
		{"graceful shutdown and Close", Draining},
		{"limit admits n and answers 429", Limit},
		{"reads share, writes exclude", ReadWrite},
		{"several keys, all or nothing, any order", MultiKey},
		{"every OPTIONS is locked, a forged preflight too", OptionsLocked},
		{"behind a CORS middleware, before or after the lock", CORSPreflights},
		{"one cookie, any spelling, one key", CookieOneKey},
		{"MaxHold ends the handler's context and frees the lock", MaxHold},
		{"MaxHold frees the lock of a handler blocked on its client", MaxHoldBlocked},
		{"identical answers for each outcome", IdenticalAnswers},
		{"a nil On* responder is the default answer", NilResponders},
		{"the route's key", RouteKey},
		{"MaxWaiters through AcquireOptions bounds every kind", MaxWaitersBound},
		{"idempotency: a retry gets the stored answer", IdempotentRetry},
		{"idempotency: concurrent duplicates, one runs", IdempotentConcurrent},
		{"idempotency: another request under the key is 422, before 409", IdempotentMismatch},
		{"idempotency: another tenant or route runs on its own", IdempotentScope},
		{"idempotency: missing, bad and optional keys", IdempotentKeyRules},
		{"idempotency: a 5xx is not stored unless every answer is", IdempotentFailures},
		{"idempotency: a body over the cap is 413", IdempotentBodyCap},
		{"idempotency: redis down", IdempotentRedisDown},
		{"idempotency: in front of the lock", IdempotentWithLock},
	} {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, a, a) })
	}
}

// RunPair runs the scenarios that involve two replicas with replica A served
// by a and replica B by b: the same resource served by two frameworks.
func RunPair(t *testing.T, a, b Adapter) {
	t.Run("exclusion "+a.Name+"+"+b.Name, func(t *testing.T) { Exclusion(t, a, b) })
	t.Run("parallel "+a.Name+"+"+b.Name, func(t *testing.T) { Parallel(t, a, b) })
	t.Run("spellings exclude "+a.Name+"+"+b.Name, func(t *testing.T) { SpellingsExclude(t, a, b) })
	t.Run("limit "+a.Name+"+"+b.Name, func(t *testing.T) { Limit(t, a, b) })
	t.Run("reads and writes "+a.Name+"+"+b.Name, func(t *testing.T) { ReadWrite(t, a, b) })
	t.Run("several keys "+a.Name+"+"+b.Name, func(t *testing.T) { MultiKey(t, a, b) })
	t.Run("OPTIONS locked "+a.Name+"+"+b.Name, func(t *testing.T) { OptionsLocked(t, a, b) })
	t.Run("CORS preflights "+a.Name+"+"+b.Name, func(t *testing.T) { CORSPreflights(t, a, b) })
	t.Run("cookie one key "+a.Name+"+"+b.Name, func(t *testing.T) { CookieOneKey(t, a, b) })
	t.Run("max hold "+a.Name+"+"+b.Name, func(t *testing.T) { MaxHold(t, a, b) })
	t.Run("max hold blocked "+a.Name+"+"+b.Name, func(t *testing.T) { MaxHoldBlocked(t, a, b) })
	t.Run("identical answers "+a.Name+"+"+b.Name, func(t *testing.T) { IdenticalAnswers(t, a, b) })
	t.Run("idempotent retry "+a.Name+"+"+b.Name, func(t *testing.T) { IdempotentRetry(t, a, b) })
	t.Run("idempotent duplicates "+a.Name+"+"+b.Name, func(t *testing.T) { IdempotentConcurrent(t, a, b) })
	t.Run("idempotent mismatch "+a.Name+"+"+b.Name, func(t *testing.T) { IdempotentMismatch(t, a, b) })
	t.Run("idempotent scope "+a.Name+"+"+b.Name, func(t *testing.T) { IdempotentScope(t, a, b) })
	t.Run("idempotent failures "+a.Name+"+"+b.Name, func(t *testing.T) { IdempotentFailures(t, a, b) })
}
