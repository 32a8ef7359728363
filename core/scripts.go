package core

import (
	_ "embed"
	"fmt"
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

	//go:embed scripts/release.lua
	releaseLua     string
	releaseScripts = newAnnouncer(nextFenceLua + withLeaveQueue(releaseLua))

	//go:embed scripts/handoff.lua
	handoffLua    string
	handoffScript = newScript(handoffLua)

	//go:embed scripts/extend.lua
	extendLua    string
	extendScript = newScript(extendLua)

	//go:embed scripts/force.lua
	forceLua     string
	forceScripts = newAnnouncer(forceLua)

	//go:embed scripts/fence.lua
	fenceLua    string
	fenceScript = newScript(fenceLua)

	//go:embed scripts/acquireall.lua
	acquireAllLua    string
	acquireAllScript = newScript(nextFenceLua + acquireAllLua)

	// sharedLibLua keeps a shared lock's books, wait queue and tombstones,
	// for the shared scripts that admit and release (see shared_lib.lua),
	// after the bound on tombstones it reads.
	//go:embed scripts/shared_lib.lua
	sharedLibLua string
	sharedLib    = fmt.Sprintf("local max_tombstones = %d\n", maxTombstones) + sharedLibLua

	//go:embed scripts/shared_acquire.lua
	sharedAcquireLua     string
	sharedAcquireScripts = newAnnouncer(nextFenceLua + sharedLib + sharedAcquireLua)

	//go:embed scripts/shared_release.lua
	sharedReleaseLua     string
	sharedReleaseScripts = newAnnouncer(nextFenceLua + sharedLib + sharedReleaseLua)

	//go:embed scripts/shared_extend.lua
	sharedExtendLua    string
	sharedExtendScript = newScript(sharedExtendLua)

	//go:embed scripts/inspect.lua
	inspectLua    string
	inspectScript = newScript(inspectLua)

	// The scripts of idempotency records (claim.go): a record hash is a
	// lock hash whose claim expires at a field of its own (see claim.lua).
	//go:embed scripts/claim.lua
	claimLua    string
	claimScript = newScript(nextFenceLua + claimLua)

	//go:embed scripts/claim_extend.lua
	claimExtendLua    string
	claimExtendScript = newScript(claimExtendLua)

	//go:embed scripts/complete.lua
	completeLua     string
	completeScripts = newAnnouncer(completeLua)

	//go:embed scripts/abandon.lua
	abandonLua     string
	abandonScripts = newAnnouncer(abandonLua)
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

// announcer is a script that announces releases, made once per publish
// command in its local publish (prepended): PUBLISH, and SPUBLISH for the
// shard channels of Redis Cluster, where the channel is in the lock's own
// slot. One script per command rather than an argument on every call: each
// argument costs Redis (acquire.lua's header).
type announcer struct{ classic, sharded *script }

func newAnnouncer(src string) announcer {
	return announcer{
		classic: newScript("local publish = 'publish'\n" + src),
		sharded: newScript("local publish = 'spublish'\n" + src),
	}
}

// on is a's script for a primary whose notifications are on shard
// channels (sharded) or on the classic bus.
func (a announcer) on(sharded bool) *script {
	if sharded {
		return a.sharded
	}
	return a.classic
}
