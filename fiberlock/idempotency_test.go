package fiberlock_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/lockkit/lockkit/fiberlock"
	"github.com/lockkit/lockkit/internal/redistest"
	"github.com/lockkit/lockkit/internal/testkit"
)

// fiber's constrained, optional and several-in-a-segment parameters are in
// the fingerprint by the names the route gives (HTTPReader.Route), so one
// key sent for another order is 422, never order 1's answer replayed.
func TestIdempotentFiberRouteParams(t *testing.T) {
	client := testkit.Client(t, redistest.Start(t).NewClient())
	app := fiber.New()
	runs := 0
	pay := func(c fiber.Ctx) error { runs++; return c.SendString("paid " + c.Params("id") + c.Params("to")) }
	app.Post("/orders/:id<int>/pay", fiberlock.Idempotent(client), pay)
	app.Post("/flights/:id-:to", fiberlock.Idempotent(client), pay)
	post := func(path, key string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
		req.Header.Set("Idempotency-Key", key)
		res, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct{ first, other, key string }{
		{"/orders/1/pay", "/orders/2/pay", "k1"},
		{"/flights/LAX-SFO", "/flights/JFK-BOS", "k2"},
	} {
		if code, body := post(tc.first, tc.key); code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.first, code, body)
		}
		if code, body := post(tc.other, tc.key); code != http.StatusUnprocessableEntity {
			t.Errorf("%s under %s's key: %d %q, want 422", tc.other, tc.first, code, body)
		}
	}
	if runs != 2 {
		t.Errorf("%d runs, want 2", runs)
	}
}
