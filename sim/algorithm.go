package sim

import (
	"context"
	"fmt"

	"dpfl/aggregators"
)

// Algorithm is the server side of a round: it has the cohort trained by an
// executor into clipped sums, privatizes them and updates the global model.
// FedAvg (a mechanism and a server optimizer) is the loop's default; AGD is
// DP-AGD.
type Algorithm interface {
	// Start prepares a run of a model of d parameters, from scratch (resume
	// nil) or continuing after the checkpointed state resume.
	Start(d int, resume *State) error
	// More reports whether another round can run (false ends the run
	// early: DP-AGD's budget is spent).
	More() bool
	// Round runs round t: the cohort is trained by ex from theta, and theta
	// is updated in place.
	Round(ctx context.Context, ex Executor, t int, cohort []int, theta []float32) (Step, error)
	// Save adds the algorithm's state to a checkpoint's.
	Save(st *State)
}

// Step is what an algorithm reports of a round.
type Step struct {
	Train  Trained
	Report aggregators.Report
	// Update is the released aggregate (see Round.Update); it belongs to
	// the algorithm.
	Update []float32
	AGD    aggregators.AGDRound // DP-AGD's round
}

// Seeker is an aggregator that can continue at round t (noise regenerated
// from the seed).
type Seeker interface {
	Seek(t int) error
}

// Stateful is an aggregator with state of its own that the seed does not
// determine (adaptive clipping's clip norm): checkpoints save it.
type Stateful interface {
	State() []float64
	SetState(s []float64) error
}

// FedAvg is the federated-averaging round: the cohort's updates clipped at
// the mechanism's clip norm and summed, privatized by the mechanism, then
// applied by the server optimizer.
type FedAvg struct {
	Aggregator aggregators.Aggregator
	Server     aggregators.ServerOptimizer

	sum    *aggregators.ClippedSum
	update []float32
}

var _ Algorithm = (*FedAvg)(nil)

// Start implements Algorithm: a resumed run needs a Seeker aggregator.
func (f *FedAvg) Start(d int, st *State) error {
	f.sum, f.update = aggregators.NewClippedSum(d, 0), make([]float32, d)
	if st == nil {
		return nil
	}
	sk, ok := f.Aggregator.(Seeker)
	if !ok {
		return fmt.Errorf("sim: aggregator %T cannot resume mid-run", f.Aggregator)
	}
	if err := sk.Seek(st.Round); err != nil {
		return err
	}
	if sa, ok := f.Aggregator.(Stateful); ok {
		if err := sa.SetState(st.AggState); err != nil {
			return fmt.Errorf("sim: checkpoint: %w", err)
		}
	} else if len(st.AggState) > 0 {
		return fmt.Errorf("sim: checkpoint has aggregator state, aggregator %T keeps none", f.Aggregator)
	}
	if err := f.Server.SetState(st.Momentum, d); err != nil {
		return fmt.Errorf("sim: checkpoint: %w", err)
	}
	return nil
}

// More implements Algorithm: every planned round runs.
func (f *FedAvg) More() bool { return true }

// Round implements Algorithm.
func (f *FedAvg) Round(ctx context.Context, ex Executor, t int, cohort []int, theta []float32) (Step, error) {
	var st Step
	clip, err := f.Aggregator.ClipNorm(t)
	if err != nil {
		return st, err
	}
	f.sum.Reset(clip)
	if st.Train, err = ex.Train(ctx, Job{Round: t, Params: theta, Clients: cohort}, f.sum); err != nil {
		return st, err
	}
	if st.Report, err = f.Aggregator.Privatize(f.update, t, f.sum); err != nil {
		return st, err
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	f.Server.Step(theta, f.update, t)
	st.Update = f.update
	return st, nil
}

// Save implements Algorithm: the server optimizer's state and the
// aggregator's, if it keeps any.
func (f *FedAvg) Save(st *State) {
	st.Momentum = f.Server.State()
	if sa, ok := f.Aggregator.(Stateful); ok {
		st.AggState = sa.State()
	}
}
