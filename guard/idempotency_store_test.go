package guard_test

import (
	"testing"

	"github.com/lockkit/lockkit/guard"
)

func TestStores(t *testing.T) {
	def, _ := guard.NewIdempotency[req](mapReader{})
	every, _ := guard.NewIdempotency(mapReader{}, guard.IdempotencyStoreEveryAnswer[req]())
	ran := func(status int) guard.Completion { return guard.Completion{Began: true, Status: status} }
	for _, tc := range []struct {
		name          string
		c             guard.Completion
		stored, every bool
	}{
		{"200", ran(200), true, true},
		{"201", ran(201), true, true},
		{"204", ran(204), true, true},
		{"303", ran(303), true, true},
		{"400 from the handler", ran(400), true, true},
		{"404", ran(404), true, true},
		{"409 from the handler", ran(409), true, true},
		{"422 from the handler", ran(422), true, true},
		{"408", ran(408), false, true},
		{"425", ran(425), false, true},
		{"429", ran(429), false, true},
		{"499", ran(499), true, true},
		{"500", ran(500), false, true},
		{"502", ran(502), false, true},
		{"503 from the handler", ran(503), false, true},
		{"1xx only", ran(103), false, false},
		{"no status", ran(0), false, false},
		{"lease lost or MaxHold", guard.Completion{Began: true, Status: 200, Ended: true}, false, false},
		{"middleware's 400", guard.Completion{Status: 400}, false, false},
		{"middleware's 409", guard.Completion{Status: 409}, false, false},
		{"middleware's 413", guard.Completion{Status: 413}, false, false},
		{"middleware's 422", guard.Completion{Status: 422}, false, false},
		{"middleware's 503", guard.Completion{Status: 503}, false, false},
		{"a lock's 409 before the handler", guard.Completion{Status: 409}, false, false},
	} {
		if got := def.Stores(tc.c); got != tc.stored {
			t.Errorf("%s: stored %v, want %v", tc.name, got, tc.stored)
		}
		if got := every.Stores(tc.c); got != tc.every {
			t.Errorf("%s, StoreEveryAnswer: stored %v, want %v", tc.name, got, tc.every)
		}
	}
}
