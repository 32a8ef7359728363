package core

import "context"

// Observers combines several Observers into one (otellock's and a debug
// view's, say), since a Client takes one. Every event goes to each of them
// in the order given. The contexts AcquireStart and AcquireEnd return are
// threaded through: each Observer receives the context the one before it
// returned, so what one puts there (a span, a mark) is still found by it in
// the later events of the same acquire or lease. HolderMetadata is the
// first non-empty one. Nil Observers are skipped; with none left the
// result is NopObserver, with one it is that Observer itself.
func Observers(obs ...Observer) Observer {
	list := make([]Observer, 0, len(obs))
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return NopObserver{}
	case 1:
		return list[0]
	}
	return observerList(list)
}

// observerList is the Observer Observers returns for two or more.
type observerList []Observer

func (f observerList) AcquireStart(ctx context.Context, a AcquireInfo) context.Context {
	for _, o := range f {
		ctx = o.AcquireStart(ctx, a)
	}
	return ctx
}

func (f observerList) HolderMetadata(ctx context.Context, a AcquireInfo) string {
	for _, o := range f {
		if m := o.HolderMetadata(ctx, a); m != "" {
			return m
		}
	}
	return ""
}

func (f observerList) Contended(ctx context.Context, a AcquireInfo, h Holder, attempt int) {
	for _, o := range f {
		o.Contended(ctx, a, h, attempt)
	}
}

func (f observerList) AcquireEnd(ctx context.Context, a AcquireInfo, r AcquireResult) context.Context {
	for _, o := range f {
		ctx = o.AcquireEnd(ctx, a, r)
	}
	return ctx
}

func (f observerList) Renewed(ctx context.Context, l LeaseInfo, err error) {
	for _, o := range f {
		o.Renewed(ctx, l, err)
	}
}

func (f observerList) Lost(ctx context.Context, l LeaseInfo, cause error) {
	for _, o := range f {
		o.Lost(ctx, l, cause)
	}
}

func (f observerList) Released(ctx context.Context, l LeaseInfo, err error) {
	for _, o := range f {
		o.Released(ctx, l, err)
	}
}

func (f observerList) Unlocked(ctx context.Context, a AcquireInfo, err error) {
	for _, o := range f {
		o.Unlocked(ctx, a, err)
	}
}
