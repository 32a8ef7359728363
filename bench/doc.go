// Package bench compares lockkit with peer Redis lock libraries on one real
// redis-server: go-redsync/redsync v4 (default and a tuned 1 ms retry),
// bsm/redislock (linear and exponential backoff) and redis/rueidis
// rueidislock, plus a bare SET NX + DEL loop as the floor.
//
// It is a separate module so the peers never enter lockkit's go.mod. Run
// `make bench` at the repository root; see results/RESULTS.md.
package bench
