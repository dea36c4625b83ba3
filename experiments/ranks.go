package experiments

import (
	"context"
	"errors"
	"io"

	"dpfl/sim"
)

// leading prepares rank 0 of a run spread over ranks (Options.Comm) and
// returns what to do when Run returns: if the run never reached training
// (it was complete, or failed before), tell the other ranks there is
// nothing to train.
func (o *Options) leading() func() {
	if o.Comm == nil {
		return func() {}
	}
	o.started = new(bool)
	started := o.started
	return func() {
		if !*started {
			_, _, _ = sim.ShareStart(o.Comm, false, nil) // the other ranks end either way
		}
	}
}

// distribute gives rank 0's start (the state it resumes from, if any) to
// the other ranks and makes spec's executor rank 0's sim.Ranks.
func (o Options) distribute(spec *sim.Spec) error {
	if o.Comm == nil {
		return nil
	}
	*o.started = true
	if _, _, err := sim.ShareStart(o.Comm, true, spec.Resume); err != nil {
		return err
	}
	return useRanks(spec, o.Comm)
}

func useRanks(spec *sim.Spec, c sim.Comm) error {
	pool, err := sim.NewPool(*spec)
	if err != nil {
		return err
	}
	spec.Executor = &sim.Ranks{Local: pool, Comm: c}
	return nil
}

// Follow is a rank above 0 of a run spread over opts.Comm's ranks: it
// plans the run, waits for rank 0's start (Run), then trains its slice of
// every cohort in the same rounds, from the same checkpointed state,
// holding the same parameters; it writes nothing. It returns nil when rank 0 had nothing to
// train or the run diverged (rank 0 records it).
func Follow(ctx context.Context, cfg *Config, opts Options) error {
	if opts.Comm == nil || opts.Comm.Rank() == 0 {
		return errors.New("experiments: Follow is for the ranks above 0 of a run spread over ranks (Options.Comm)")
	}
	opts.Data = opts.data()
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	// Plan while rank 0 plans and opens the run folder (a plan is the
	// same on every rank: it derives from the config and the seed).
	p, err := NewPlan(ctx, cfg, opts)
	if err != nil {
		return err
	}
	train, resume, err := sim.ShareStart(opts.Comm, false, nil)
	if err != nil || !train {
		return err
	}
	spec, err := p.simSpec(opts)
	if err != nil {
		return err
	}
	if aud := p.newAuditor(spec.Root, cfg.Model.NumParams(p.Data.Train.Dim, p.Data.Train.Classes)); aud != nil {
		spec.Canary = aud.canary
	}
	spec.Resume = resume
	if err := useRanks(&spec, opts.Comm); err != nil {
		return err
	}
	if _, err := sim.Run(ctx, spec, nil); err != nil && !errors.Is(err, sim.ErrDiverged) {
		return err
	}
	return nil
}
