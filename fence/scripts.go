package fence

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts are the whole Redis side of the package: one round trip each,
// atomic, and idempotent per token, so go-redis re-sending one after a
// timeout (MaxRetries) does no harm. go-redis's Script.Run sends EVALSHA
// and falls back to EVAL when the server does not know the script
// (NOSCRIPT: a restart, a failover, SCRIPT FLUSH).
var (
	// libLua defines newer(a, b), the token order, and now_ms().
	//go:embed scripts/lib.lua
	libLua string

	//go:embed scripts/set.lua
	setLua    string
	setScript = redis.NewScript(libLua + setLua)

	//go:embed scripts/delete.lua
	deleteLua    string
	deleteScript = redis.NewScript(libLua + deleteLua)

	//go:embed scripts/get.lua
	getLua    string
	getScript = redis.NewScript(libLua + getLua)

	//go:embed scripts/claim.lua
	claimLua    string
	claimScript = redis.NewScript(libLua + claimLua)
)
