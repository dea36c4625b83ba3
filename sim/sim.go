// Package sim runs the federated round loop: for each planned round an
// Algorithm has the cohort trained by an Executor into a clipped sum,
// privatizes it and updates the global model, and the loop evaluates on the
// central test set every EvalEvery rounds and tells its Callbacks.
//
// The seams:
//   - Executor trains a round's clients from the global model and adds
//     their updates, clipped, to an aggregators.ClippedSum (with the
//     cohort's train-loss sum), and scores the cohort's clipped losses at
//     candidate models (DP-AGD). Pool, a pool of Workers goroutines, is
//     the default; an executor whose clients train in other processes
//     hands back their partial sums, which ClippedSum.Merge adds
//     (TestSplitExecutor splits every cohort in two so). Ranks is the
//     executor of one process (rank) of a run spread over several through
//     a Comm (an MPI communicator, package mpi): each rank trains a fixed
//     slice of every cohort and the ranks' partial sums are added as
//     integers.
//   - Algorithm is the server side of a round: FedAvg (an
//     aggregators.Aggregator privatizes the sum at its clip norm, then the
//     server optimizer applies it) by default, or AGD (DP-AGD: the noisy
//     gradient from the sum, noisy maxes over the executor's loss sums, the
//     run ending when its ledger is spent). Algorithms own their state
//     across rounds and checkpoints (Start, Save).
//   - Callback is told of every completed round and of an interruption:
//     recording, progress reports, an audit's statistics (through Run's
//     onRound) and Checkpoints, which saves the loop's State.
//
// Determinism: every random choice comes from streams of Spec.Root named by
// label and index (("init"), ("client", round, id), ("noise", t) inside the
// aggregator), each client's delta lands in its own slot, every sum of
// clients' updates is exact and order-free (ClippedSum's fixed-point vector
// and statistics), and the clients' losses (one number each) travel whole
// and are summed in cohort order (SumInOrder), so results are identical
// bit for bit for any worker count, any split of the cohort among
// executors and any number of ranks.
//
// Package sim imports clients, aggregators, participation, models, datasets
// and sim/rng; it does not import privacy or experiments: privacy accounting
// is computed by the caller from the planned schedule. Executors and
// algorithms see only the clients' ids, the global model and the sums;
// aggregators never imports sim.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"dpfl/aggregators"
	"dpfl/clients"
	"dpfl/datasets"
	"dpfl/models"
	"dpfl/participation"
	"dpfl/sim/rng"
)

// Spec is everything a run needs, already built.
type Spec struct {
	Data     *datasets.Federated
	Model    models.Spec
	Client   clients.Config
	Schedule *participation.Schedule // planned and audited by the caller
	// Algorithm is the server side of a round (nil: FedAvg with Aggregator
	// and Server).
	Algorithm  Algorithm
	Aggregator aggregators.Aggregator
	Server     aggregators.ServerOptimizer
	// Executor trains the cohorts (nil: NewPool(spec), Workers goroutines
	// in this process).
	Executor  Executor
	EvalEvery int // evaluate after every EvalEvery rounds and after the last
	EvalBatch int // rows per evaluation batch (default 500)
	// Validation, if not nil, is evaluated beside Data.Test at every
	// evaluation (Round.ValAcc, Summary.FinalValAcc).
	Validation *datasets.Dataset
	Workers    int // goroutines training clients and evaluating (default 1)
	Root       rng.Root

	// Init, if not nil, is the initial global model (the model's length);
	// nil: drawn from the stream ("init").
	Init []float32
	// Trainable, if not nil, is the part of the model that is trained
	// (some tensors frozen): the algorithm, the clipped sum, the noise and
	// the server optimizer see only its coordinates, clients do not move
	// the frozen ones, and those keep their initial values bit for bit.
	// It needs the default executor (Executor nil).
	Trainable *models.Trainable

	// Resume, if not nil, continues a run from a checkpointed state instead
	// of round 0 (see Algorithm.Start; FedAvg's aggregator must then be a
	// Seeker). A resumed run's rounds are bit-identical to an uninterrupted
	// run's.
	Resume *State

	// Canary, if not nil, is the default executor's source of the updates
	// of clients without data (the canary clients of an empirical privacy
	// audit): for a client it claims it writes the client's update into
	// delta and returns true, and the client is not trained. Such an update
	// is clipped, summed and noised like any other; it takes no part in the
	// train loss. Canary must be safe for concurrent use (workers call it in
	// parallel).
	Canary func(id int, delta []float32) bool

	// Callbacks are told of every completed round, in order, after Run's
	// onRound (Checkpoints saves the state).
	Callbacks []Callback
}

// State is the loop's state after a completed round: everything a run needs
// to continue (the schedule, data and random streams are fixed by the seed).
type State struct {
	Round     int       // rounds completed
	Params    []float32 // global model
	Momentum  []float64 // server optimizer state (aggregators.ServerOptimizer.State; nil: none)
	AggState  []float64 // the aggregator's state when it is Stateful (adaptive clipping: the clip norm; nil: none)
	FinalLoss float64   // last evaluation so far
	FinalAcc  float64
	BestAcc   float64
}

// Round is what the loop reports after each round.
type Round struct {
	Round     int // 1-based count of rounds done
	Planned   int // rounds in the schedule
	Cohort    int
	TrainLoss float64 // mean local training loss of the cohort (simulator-only diagnostic)
	Report    aggregators.Report
	Evaluated bool
	TestLoss  float64
	TestAcc   float64
	ValAcc    float64 // accuracy on Spec.Validation (0 without one)
	// Update is the round's aggregate as the aggregator released it (the
	// noisy sum divided by the denominator), before the server optimizer;
	// it belongs to the loop and is valid only during the round's
	// callbacks.
	Update []float32
	AGD    aggregators.AGDRound // DP-AGD's round (AGD)
}

// Summary is the outcome of a run.
type Summary struct {
	Rounds    int
	FinalLoss float64
	FinalAcc  float64
	BestAcc   float64
	// FinalValAcc is the last evaluation's accuracy on Spec.Validation
	// (0 without one).
	FinalValAcc float64
	Params      []float32
	Init        []float32 // the initial global model (from the stream ("init"))
	Wall        time.Duration
}

// ErrDiverged is returned when the global model becomes non-finite.
var ErrDiverged = errors.New("sim: global model diverged (non-finite parameters)")

// Run executes the schedule. onRound, if not nil, is called after every round
// on the calling goroutine, before s.Callbacks.
func Run(ctx context.Context, s Spec, onRound func(Round)) (Summary, error) {
	start := time.Now()
	if s.Workers <= 0 {
		s.Workers = 1
	}
	if s.EvalBatch <= 0 {
		s.EvalBatch = 500
	}
	if s.EvalEvery <= 0 {
		s.EvalEvery = 1
	}
	if onRound != nil {
		s.Callbacks = append([]Callback{roundFunc(onRound)}, s.Callbacks...)
	}
	r, err := newRunner(s)
	if err != nil {
		return Summary{}, err
	}
	if err := r.resume(); err != nil {
		return r.sum, err
	}
	for t := r.sum.Rounds; t < len(s.Schedule.Rounds); t++ {
		if err := ctx.Err(); err != nil {
			return r.stop(ctx, err)
		}
		if !r.alg.More() {
			break // the budget is spent: the rounds so far are the run
		}
		rd, stopErr, err := r.round(ctx, t)
		if stopErr != nil {
			return r.stop(ctx, stopErr)
		}
		if err != nil {
			return r.sum, err
		}
		r.sum.Rounds = t + 1
		for _, c := range s.Callbacks {
			if err := c.AfterRound(rd, r.state); err != nil {
				return r.sum, err
			}
		}
	}
	r.sum.Params = r.theta
	r.sum.Wall = time.Since(start)
	return r.sum, nil
}

// runner is a run's state: the algorithm and the executor; one evaluator
// per worker, built once; the global model; the summary so far.
type runner struct {
	s       Spec
	alg     Algorithm
	ex      Executor
	evals   []models.Model
	theta   []float32 // the global model
	thetaT  []float32 // its trained coordinates (theta itself when nothing is frozen)
	sum     Summary
	started int // rounds done when the run started (the resume point)
}

func newRunner(s Spec) (*runner, error) {
	train := s.Data.Train
	r := &runner{s: s, alg: s.Algorithm, ex: s.Executor, evals: make([]models.Model, s.Workers)}
	if s.Trainable != nil && r.ex != nil {
		return nil, errors.New("sim: frozen tensors (Spec.Trainable) need the default executor")
	}
	var pool *Pool
	if r.ex == nil {
		p, err := NewPool(s)
		if err != nil {
			return nil, err
		}
		r.ex, pool = p, p
	}
	for w := range r.evals {
		var err error
		if r.evals[w], err = s.Model.Build(train.Dim, train.Classes, s.EvalBatch); err != nil {
			return nil, err
		}
	}
	if r.alg == nil {
		r.alg = &FedAvg{Aggregator: s.Aggregator, Server: s.Server}
	}
	r.theta = make([]float32, r.evals[0].NumParams())
	if s.Init != nil {
		if len(s.Init) != len(r.theta) {
			return nil, fmt.Errorf("sim: initial model of %d parameters, the model has %d", len(s.Init), len(r.theta))
		}
		copy(r.theta, s.Init)
	} else {
		r.evals[0].Init(s.Root.Stream("init"))
		copy(r.theta, r.evals[0].Params())
	}
	r.sum.Init = append([]float32(nil), r.theta...)
	r.thetaT = r.theta
	if t := s.Trainable; t != nil {
		if t.Total != len(r.theta) {
			return nil, fmt.Errorf("sim: trainable part of a model of %d parameters, the model has %d", t.Total, len(r.theta))
		}
		r.thetaT = make([]float32, t.Len())
		t.Gather(r.thetaT, r.theta)
		pool.freeze(t, r.theta)
	}
	return r, nil
}

// resume starts the algorithm, restoring the state of s.Resume, if any.
func (r *runner) resume() error {
	s, st := r.s, r.s.Resume
	if st == nil {
		return r.alg.Start(len(r.thetaT), nil)
	}
	if len(st.Params) != len(r.theta) {
		return fmt.Errorf("sim: checkpoint has %d parameters, the model has %d", len(st.Params), len(r.theta))
	}
	if st.Round < 0 || st.Round > len(s.Schedule.Rounds) {
		return fmt.Errorf("sim: checkpoint after round %d of a %d-round schedule", st.Round, len(s.Schedule.Rounds))
	}
	if err := r.alg.Start(len(r.thetaT), st); err != nil {
		return err
	}
	copy(r.theta, st.Params)
	if t := s.Trainable; t != nil {
		t.Gather(r.thetaT, r.theta)
	}
	r.started = st.Round
	r.sum.Rounds, r.sum.FinalLoss, r.sum.FinalAcc, r.sum.BestAcc = st.Round, st.FinalLoss, st.FinalAcc, st.BestAcc
	return nil
}

// state is the loop's state after the rounds done.
func (r *runner) state() State {
	st := State{Round: r.sum.Rounds, Params: r.theta, FinalLoss: r.sum.FinalLoss, FinalAcc: r.sum.FinalAcc, BestAcc: r.sum.BestAcc}
	r.alg.Save(&st)
	return st
}

// stop ends the run on an error; when the context was cancelled after
// rounds were done, the callbacks are told (Callback.Interrupted) so that
// the progress is saved.
func (r *runner) stop(ctx context.Context, err error) (Summary, error) {
	if ctx.Err() != nil && r.sum.Rounds > r.started {
		st := r.state()
		for _, c := range r.s.Callbacks {
			if cerr := c.Interrupted(st); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}
	return r.sum, err
}

// round trains, aggregates and applies round t (the algorithm's round on
// the executor), and evaluates it when due. stopErr ends the run with its
// progress saved (see stop); err ends it as it is (divergence, or a failed
// evaluation: the round is redone after a resume).
func (r *runner) round(ctx context.Context, t int) (rd Round, stopErr, err error) {
	s := r.s
	cohort := s.Schedule.Rounds[t]
	rd = Round{Round: t + 1, Planned: len(s.Schedule.Rounds), Cohort: len(cohort)}
	step, err := r.alg.Round(ctx, r.ex, t, cohort, r.thetaT)
	if err != nil {
		return rd, err, nil
	}
	if tr := s.Trainable; tr != nil {
		tr.Scatter(r.theta, r.thetaT)
	}
	if !finite(r.theta) {
		return rd, nil, fmt.Errorf("%w after round %d", ErrDiverged, t+1)
	}
	rd.Report, rd.Update, rd.AGD = step.Report, step.Update, step.AGD
	if n := len(step.Train.Losses); n > 0 {
		rd.TrainLoss = SumInOrder(step.Train.Losses) / float64(n)
	}
	last := t+1 == len(s.Schedule.Rounds) || !r.alg.More()
	if (t+1)%s.EvalEvery == 0 || last {
		loss, acc, err := evaluate(ctx, r.evals, r.theta, s.Data.Test, s.EvalBatch)
		if err != nil {
			return rd, nil, err
		}
		rd.Evaluated, rd.TestLoss, rd.TestAcc = true, loss, acc
		r.sum.FinalLoss, r.sum.FinalAcc = loss, acc
		r.sum.BestAcc = max(r.sum.BestAcc, acc)
		if s.Validation != nil {
			if _, rd.ValAcc, err = evaluate(ctx, r.evals, r.theta, s.Validation, s.EvalBatch); err != nil {
				return rd, nil, err
			}
			r.sum.FinalValAcc = rd.ValAcc
		}
	}
	return rd, nil, nil
}

func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// evaluate returns the mean loss and accuracy of theta on the test set. The
// set is cut into fixed batches of evalBatch rows whatever the worker count;
// per-batch sums are combined in batch order, so the result is identical for
// any number of evaluators.
func evaluate(ctx context.Context, evals []models.Model, theta []float32, test *datasets.Dataset, evalBatch int) (loss, acc float64, err error) {
	n := test.Len()
	nb := (n + evalBatch - 1) / evalBatch
	scores := make([]models.Score, nb)
	errs := make([]error, len(evals))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w, m := range evals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(m.Params(), theta)
			b := datasets.NewBatch(evalBatch, test.Dim)
			idx := make([]int, 0, evalBatch)
			for {
				mu.Lock()
				k := next
				next++
				mu.Unlock()
				if k >= nb || ctx.Err() != nil {
					return
				}
				idx = idx[:0]
				for i := k * evalBatch; i < min((k+1)*evalBatch, n); i++ {
					idx = append(idx, i)
				}
				b.Fill(test, idx)
				sc, err := m.Eval(b)
				if err != nil {
					errs[w] = err
					return
				}
				scores[k] = sc
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	var total models.Score
	for _, sc := range scores {
		total.Add(sc)
	}
	if total.Count == 0 {
		return 0, 0, errors.New("sim: evaluation scored nothing")
	}
	return total.LossSum / float64(total.Count), float64(total.Correct) / float64(total.Count), nil
}

// Evaluate returns the mean loss and accuracy of the parameters theta of a
// model of spec (built for inputs of dim and classes) on the test set, in
// batches of evalBatch rows (default 500) on workers evaluators (default 1):
// the computation Run does after its rounds, so a run's saved final model
// scores its final accuracy bit for bit.
func Evaluate(ctx context.Context, spec models.Spec, dim, classes int, theta []float32, test *datasets.Dataset, evalBatch, workers int) (loss, acc float64, err error) {
	if evalBatch <= 0 {
		evalBatch = 500
	}
	evals := make([]models.Model, max(1, workers))
	for w := range evals {
		if evals[w], err = spec.Build(dim, classes, evalBatch); err != nil {
			return 0, 0, err
		}
	}
	if n := evals[0].NumParams(); n != len(theta) {
		return 0, 0, fmt.Errorf("sim: %d parameters for a model of %d", len(theta), n)
	}
	return evaluate(ctx, evals, theta, test, evalBatch)
}
