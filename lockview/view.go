package lockview

import (
	"github.com/lockkit/lockkit/core"
)

// View records lock events (its Observer) and serves them with the
// Client's own locks (its Handler). Make one per core.Client: the Observer
// goes into the Client's options, the Handler needs the Client.
type View struct {
	cfg config
	rec *recorder
}

// New returns a View; an option out of range is ErrInvalidOption.
func New(opts ...Option) (*View, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	v := &View{cfg: cfg}
	v.rec = newRecorder(&v.cfg)
	return v, nil
}

// Observer is the core.Observer that feeds the hot keys, losses and
// errors. Give it to the Client (with others through core.Observers):
//
//	core.WithObserver(core.Observers(otellock.New(), v.Observer()))
//
// It does no I/O and holds a short mutex per event; once a key is tracked
// its events allocate nothing.
func (v *View) Observer() core.Observer { return v.rec }
