package core

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts are the whole Redis-side protocol; each is one round trip
// and each is idempotent per owner token, so go-redis re-sending one after a
// timeout (MaxRetries) does no harm.
var (
	// nextFenceLua defines next_fence(last, t), the fencing rule, for the
	// scripts that hand out a lock (release.lua grants it to a waiter).
	//go:embed scripts/nextfence.lua
	nextFenceLua string

	//go:embed scripts/acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(nextFenceLua + acquireLua)

	//go:embed scripts/release.lua
	releaseLua    string
	releaseScript = redis.NewScript(nextFenceLua + releaseLua)

	//go:embed scripts/handoff.lua
	handoffLua    string
	handoffScript = redis.NewScript(nextFenceLua + handoffLua)

	//go:embed scripts/extend.lua
	extendLua    string
	extendScript = redis.NewScript(extendLua)

	//go:embed scripts/force.lua
	forceLua    string
	forceScript = redis.NewScript(forceLua)

	//go:embed scripts/fence.lua
	fenceLua    string
	fenceScript = redis.NewScript(fenceLua)

	//go:embed scripts/inspect.lua
	inspectLua    string
	inspectScript = redis.NewScript(inspectLua)
)
