package lockkit_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Dependencies point one way: an adapter imports the seam (guard, and
// guard/rpckey for RPC) and the engine (core), never another adapter, nor
// anything else of lockkit's; the seam and the engine import no framework.
func TestDependencies(t *testing.T) {
	const mod = "github.com/lockkit/lockkit"
	allowed := map[string]bool{mod + "/core": true, mod + "/guard": true, mod + "/guard/rpckey": true}
	for _, pkg := range []string{"ginlock", "echolock", "echo5lock", "httplock", "grpclock", "connectlock", "fiberlock", "guard", "guard/rpckey", "core"} {
		out, err := exec.Command("go", "list", "-deps", "./"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			switch {
			case dep == mod+"/"+pkg:
			case strings.HasPrefix(dep, mod+"/") && !allowed[dep]:
				t.Errorf("%s imports %s", pkg, dep)
			case (pkg == "core" || strings.HasPrefix(pkg, "guard")) && isFramework(dep):
				t.Errorf("%s imports the framework %s", pkg, dep)
			}
		}
	}
}

func isFramework(dep string) bool {
	for _, f := range []string{"github.com/gin-gonic/", "github.com/labstack/", "github.com/gofiber/", "github.com/valyala/", "google.golang.org/grpc", "connectrpc.com/", "go.opentelemetry.io/", "github.com/go-chi/"} {
		if strings.HasPrefix(dep, f) {
			return true
		}
	}
	return false
}
