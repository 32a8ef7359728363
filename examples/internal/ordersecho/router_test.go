package ordersecho

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// See exampletest.Router: the service, and what Config decides.
func TestRouter(t *testing.T) { exampletest.Router(t, NewRouter) }
