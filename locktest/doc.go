// Package locktest is for unit tests of code that takes lockkit locks, most
// often request handlers behind ginlock, echolock, echo5lock, httplock or
// grpclock. It gives a test a *core.Client on an embedded, in-process Redis
// (miniredis), so no redis-server has to be installed, and makes the
// conditions a handler must answer happen on demand, each seen by the
// engine exactly as in production:
//
//   - HoldByAnother: another owner holds the lock, until its lease is
//     released. Acquires of the Client fail with core.ErrNotAcquired (an
//     adapter answers 409 or codes.Aborted).
//   - SetUnavailable: every Redis command fails, until SetUnavailable(false).
//     Acquires fail with core.ErrUnavailable (503 or codes.Unavailable).
//   - LoseLease: the Client's lease on a key is lost now: its context, and
//     the handler's context under an adapter, is cancelled with
//     context.Cause core.ErrLost.
//
// Start with New in a test; everything is closed at the test's cleanup:
//
//	func TestPayConflict(t *testing.T) {
//		srv := locktest.New(t)
//		r := gin.New()
//		r.POST("/orders/:id/pay", ginlock.New(srv.Client(),
//			ginlock.Key(ginlock.Const("order"), ginlock.Param("id")), ginlock.NoWait()), pay)
//
//		if _, err := srv.HoldByAnother(t.Context(), "order:42"); err != nil {
//			t.Fatal(err)
//		}
//		w := httptest.NewRecorder()
//		r.ServeHTTP(w, httptest.NewRequest("POST", "/orders/42/pay", nil))
//		// w.Code == 409
//	}
//
// Start and Close do the same without a *testing.T (in Example functions).
//
// The Client's default lease TTL is short (DefaultTTL, 1s) so that a loss
// is noticed quickly: the engine learns of a loss when its next renewal,
// every TTL/3, finds the lock gone, and LoseLease waits for that. A route
// or acquire that sets its own TTL keeps it, and LoseLease then takes up to
// a third of that TTL. miniredis's clock does not move by itself, so keys
// never expire on the server while a test runs; leases end only by release
// or loss, and a loss by a local deadline needs renewals to fail
// (SetUnavailable) for a whole TTL.
//
// locktest proves what a handler does with each outcome; it is no witness
// of the engine's behaviour under real failures, which lockkit tests on
// real redis-server processes. Each Server is independent: tests using
// locktest may run in parallel.
package locktest
