package fence

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// script is a Lua script with its SHA1 and source boxed once as command
// arguments (see Redis.eval).
type script struct {
	sha, src any
}

func newScript(src string) *script {
	s := redis.NewScript(src)
	return &script{sha: s.Hash(), src: src}
}

// The scripts are the whole Redis side of the package: one round trip each,
// atomic, and idempotent per token, so go-redis re-sending one after a
// timeout (MaxRetries) does no harm.
var (
	// libLua defines newer(a, b), the token order, and now_ms().
	//go:embed scripts/lib.lua
	libLua string

	//go:embed scripts/set.lua
	setLua    string
	setScript = newScript(libLua + setLua)

	//go:embed scripts/delete.lua
	deleteLua    string
	deleteScript = newScript(libLua + deleteLua)

	//go:embed scripts/get.lua
	getLua    string
	getScript = newScript(libLua + getLua)
)
