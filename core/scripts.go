package core

import (
	_ "embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

// script is a Lua script with its SHA1 and source boxed once as command
// arguments (see primary.eval); Script serves the paths that pipeline.
type script struct {
	*redis.Script
	sha, src any
}

func newScript(src string) *script {
	s := redis.NewScript(src)
	return &script{Script: s, sha: s.Hash(), src: src}
}

// The Lua scripts are the whole Redis-side protocol; each is one round trip
// and each is idempotent per owner token, so go-redis re-sending one after a
// timeout (MaxRetries) does no harm.
var (
	// nextFenceLua defines next_fence(last, t), the fencing rule, for the
	// scripts that hand out a lock (release.lua grants it to a waiter).
	//go:embed scripts/nextfence.lua
	nextFenceLua string

	// leaveQueueLua is a block that acquire.lua and release.lua run inline
	// where they have its marker line (see leavequeue.lua).
	//go:embed scripts/leavequeue.lua
	leaveQueueLua string

	//go:embed scripts/acquire.lua
	acquireLua    string
	acquireScript = newScript(nextFenceLua + withLeaveQueue(acquireLua))

	// release.lua announces a release with the command in its local
	// publish, prepended: one script per command rather than an argument
	// on every release (see release.lua).
	//go:embed scripts/release.lua
	releaseLua           string
	releaseScript        = newScript("local publish = 'publish'\n" + nextFenceLua + withLeaveQueue(releaseLua))
	releaseShardedScript = newScript("local publish = 'spublish'\n" + nextFenceLua + withLeaveQueue(releaseLua))

	//go:embed scripts/handoff.lua
	handoffLua    string
	handoffScript = newScript(handoffLua)

	//go:embed scripts/extend.lua
	extendLua    string
	extendScript = newScript(extendLua)

	//go:embed scripts/force.lua
	forceLua    string
	forceScript = newScript(forceLua)

	//go:embed scripts/fence.lua
	fenceLua    string
	fenceScript = newScript(fenceLua)

	//go:embed scripts/acquireall.lua
	acquireAllLua    string
	acquireAllScript = newScript(nextFenceLua + acquireAllLua)

	//go:embed scripts/shared_acquire.lua
	sharedAcquireLua    string
	sharedAcquireScript = newScript(nextFenceLua + sharedAcquireLua)

	//go:embed scripts/shared_release.lua
	sharedReleaseLua    string
	sharedReleaseScript = newScript(sharedReleaseLua)

	//go:embed scripts/shared_extend.lua
	sharedExtendLua    string
	sharedExtendScript = newScript(sharedExtendLua)

	//go:embed scripts/inspect.lua
	inspectLua    string
	inspectScript = newScript(inspectLua)
)

// leaveQueueMarker is the line of a script that leavequeue.lua takes.
const leaveQueueMarker = "-- (leavequeue.lua)\n"

// withLeaveQueue returns src with leavequeue.lua in place of its marker
// line. A script without the marker is a mistake in this package: it
// panics, at init, so no test runs without noticing.
func withLeaveQueue(src string) string {
	if strings.Count(src, leaveQueueMarker) != 1 {
		panic("lockkit: a script lacks the line " + leaveQueueMarker)
	}
	return strings.Replace(src, leaveQueueMarker, leaveQueueLua, 1)
}
