package core

import (
	"context"
	"time"

	"github.com/lockkit/lockkit/internal/corehook"
)

func init() {
	corehook.AcquireSettings = acquireSettings
	corehook.Unlocked = unlocked
	corehook.Acquire = hookAcquire
	corehook.AcquireAll = hookAcquireAll
}

// hookAcquire is Client.Acquire with the adapters' settings given as
// values rather than options, so a request builds no option closures.
func hookAcquire(ctx context.Context, client any, key string, s corehook.Settings, opts any) (any, error) {
	c := client.(*Client)
	base := acquireConfig{ttl: c.cfg.ttl, wait: s.Wait, noWait: s.NoWait, name: s.Name}
	if s.TTL > 0 {
		base.ttl = s.TTL
	}
	o, _ := opts.([]AcquireOption)
	var l *Lease
	var err error
	switch s.Kind {
	case corehook.Semaphore:
		l, err = c.acquireSharedFrom(ctx, key, modePermit, s.Limit, false, base, o)
	case corehook.Read:
		l, err = c.acquireSharedFrom(ctx, key, modeRead, 0, false, base, o)
	case corehook.Write:
		l, err = c.acquireSharedFrom(ctx, key, modeWrite, 0, false, base, o)
	default:
		l, err = c.acquireFrom(ctx, key, false, base, o)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// hookAcquireAll is Client.AcquireAll with the adapters' settings as values.
func hookAcquireAll(ctx context.Context, client any, keys []string, s corehook.Settings, opts any) (any, error) {
	c := client.(*Client)
	base := acquireConfig{ttl: c.cfg.ttl, wait: s.Wait, noWait: s.NoWait, name: s.Name}
	if s.TTL > 0 {
		base.ttl = s.TTL
	}
	o, _ := opts.([]AcquireOption)
	m, err := c.acquireAllFrom(ctx, keys, base, o)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// unlocked reports a fail-open run to the Client's Observer.
func unlocked(ctx context.Context, client any, key, name string, err error) {
	c := client.(*Client)
	c.obs.Unlocked(ctx, AcquireInfo{Key: key, Name: name, Start: time.Now(), Owner: c.cfg.owner}, err)
}

// acquireSettings applies opts to two different baselines: a setting an
// option touches differs from at least one of them.
func acquireSettings(v any) (wait, noWait, ttl, name bool) {
	opts, _ := v.([]AcquireOption)
	a := acquireConfig{wait: -1, ttl: -1, name: "\x00a"}
	b := acquireConfig{wait: -2, noWait: true, ttl: -2, name: "\x00b"}
	for _, o := range opts {
		o(&a)
		o(&b)
	}
	return a.wait != -1 || b.wait != -2 || a.noWait || !b.noWait,
		a.noWait || !b.noWait,
		a.ttl != -1 || b.ttl != -2,
		a.name != "\x00a" || b.name != "\x00b"
}
