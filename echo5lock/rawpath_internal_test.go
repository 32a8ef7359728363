package echo5lock

import (
	"reflect"
	"strings"
	"testing"
)

// The reflection finds echo's fields in the echo this module builds with;
// an echo that renamed them fails here and in ToMiddleware, never silently.
func TestRouterLayout(t *testing.T) {
	if layoutErr != nil {
		t.Fatalf("echo's layout: %v", layoutErr)
	}
	type notEcho struct{ unescapePathParamValues bool }
	if _, err := routerLayout(reflect.TypeFor[notEcho]()); err == nil || !strings.Contains(err.Error(), "useEscapedPathForRouting") {
		t.Fatalf("a router without the fields: %v", err)
	}
}
