package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockkit/lockkit/examples/internal/orders"
)

// The demo's data on a Redis, which may be a user's (REDIS_URL): the order
// book's records, written through the fenced store, are named
// lockkit-demo:orders:<id>, each expires an hour after its last write
// (its fencing token an hour after that), and the demo removes them when
// it ends, however it ends (a run killed before its end leaves them to
// expire). Its locks are core's hashes (lockkit:v1:...), which expire by
// themselves seconds after their release; its payments' idempotency
// records (lockkit:v1:i:...) after the adapters' retention, 24 hours (each
// run's keys are its own, so a later run never replays them).
const (
	dataPrefix = "lockkit-demo:orders:"
	dataTTL    = time.Hour // a run lasts at most maxDuration
	dataKeep   = time.Hour // fence.WithKeep: the token outlives the value by this
)

// records is where and for how long the demo's book keeps its records.
var records = orders.Records{Prefix: dataPrefix, TTL: dataTTL}

// removeRecords deletes the records store wrote, one UNLINK each in
// pipelines (a cluster's pipeline is split by slot; a multi-key UNLINK
// would span slots), removeBatch keys at a time.
func removeRecords(ctx context.Context, rdb redis.UniversalClient, store *orders.Store) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keys := store.RecordKeys()
	var errs []error
	for len(keys) > 0 {
		n := min(len(keys), removeBatch)
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys[:n] {
				p.Unlink(ctx, k)
			}
			return nil
		})
		errs = append(errs, err)
		keys = keys[n:]
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing the demo's order records (%s*, which expire within %v): %w", dataPrefix, dataTTL+dataKeep, err)
	}
	return nil
}

const removeBatch = 500
