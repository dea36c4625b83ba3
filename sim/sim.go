// Package sim runs the federated round loop: for each planned round it trains
// the cohort's clients on a pool of workers, hands their deltas to the
// aggregator in client-ID order, applies the server optimizer, and evaluates
// on the central test set every EvalEvery rounds.
//
// Determinism: every random choice comes from streams of Spec.Root named by
// label and index (("init"), ("client", round, id), ("noise", t) inside the
// aggregator), each client's delta lands in its own slot, and sums run in a
// fixed order, so results are identical for any worker count.
//
// Package sim imports clients, aggregators, participation, models, datasets
// and sim/rng; it does not import privacy or experiments: privacy accounting
// is computed by the caller from the planned schedule.
package sim

import (
	"context"
	"errors"
	"fmt"
	"iter"
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
	Data       *datasets.Federated
	Model      models.Spec
	Client     clients.Config
	Schedule   *participation.Schedule // planned and audited by the caller
	Aggregator aggregators.Aggregator
	Server     aggregators.ServerOptimizer
	EvalEvery  int // evaluate after every EvalEvery rounds and after the last
	EvalBatch  int // rows per evaluation batch (default 500)
	// Validation, if not nil, is evaluated beside Data.Test at every
	// evaluation (Round.ValAcc, Summary.FinalValAcc).
	Validation *datasets.Dataset
	Workers    int // goroutines training clients (default 1)
	Root       rng.Root

	// Resume, if not nil, continues a run from a checkpointed state instead
	// of round 0; the aggregator must then be a Seeker. A resumed run's
	// rounds are bit-identical to an uninterrupted run's.
	Resume *State
	// Checkpoint, if not nil, is called with the state after every
	// CheckpointEvery-th round (0: never periodically) and, when the context
	// is cancelled, with the state after the last completed round. The
	// State's slices belong to the loop: Checkpoint must copy or write them
	// before returning.
	Checkpoint      func(State) error
	CheckpointEvery int

	// Canary, if not nil, supplies the updates of clients without data
	// (the canary clients of an empirical privacy audit): for a client it
	// claims it writes the client's update into delta and returns true, and
	// the client is not trained. Such an update is clipped, summed and
	// noised like any other; it takes no part in the train loss. Canary must
	// be safe for concurrent use (workers call it in parallel).
	Canary func(id int, delta []float32) bool

	// AGD, if not nil, runs DP-AGD (aggregators.AGD) instead of Aggregator
	// and Server: each round's step is chosen by its noisy max over the
	// cohort's clipped losses, and the run ends when its ledger cannot pay
	// for another round (Summary.Rounds is then below the schedule's). It
	// cannot resume from a checkpoint (Resume must be nil).
	AGD *aggregators.AGD
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

// Round is what the loop reports after each round.
type Round struct {
	Round     int // 1-based count of rounds done
	Cohort    int
	TrainLoss float64 // mean local training loss of the cohort (simulator-only diagnostic)
	Report    aggregators.Report
	Evaluated bool
	TestLoss  float64
	TestAcc   float64
	ValAcc    float64 // accuracy on Spec.Validation (0 without one)
	// Update is the round's aggregate as the aggregator released it (the
	// noisy sum divided by the denominator), before the server optimizer;
	// it belongs to the loop and is valid only during the round hook.
	Update []float32
	AGD    aggregators.AGDRound // DP-AGD's round (Spec.AGD)
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
// on the calling goroutine.
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
		if s.AGD != nil && !s.AGD.Affordable() {
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
		if onRound != nil {
			onRound(rd)
		}
		if s.CheckpointEvery > 0 && r.sum.Rounds%s.CheckpointEvery == 0 && r.sum.Rounds < len(s.Schedule.Rounds) {
			if err := r.checkpoint(); err != nil {
				return r.sum, err
			}
		}
	}
	r.sum.Params = r.theta
	r.sum.Wall = time.Since(start)
	return r.sum, nil
}

// runner is a run's state: one model, trainer and evaluator per worker,
// built once; the global model and its update; the summary so far.
type runner struct {
	s             Spec
	trainers      []*clients.Trainer
	evals         []models.Model
	theta, update []float32
	pool          *pool
	sum           Summary
	saved         int // rounds covered by the last checkpoint (or the resume point)
	agd           *agdState
}

func newRunner(s Spec) (*runner, error) {
	train := s.Data.Train
	r := &runner{s: s, trainers: make([]*clients.Trainer, s.Workers), evals: make([]models.Model, s.Workers)}
	for w := range r.trainers {
		m, err := s.Model.Build(train.Dim, train.Classes, s.Client.BatchSize)
		if err != nil {
			return nil, err
		}
		if r.trainers[w], err = clients.NewTrainer(m, train.Dim, s.Client); err != nil {
			return nil, err
		}
		if r.evals[w], err = s.Model.Build(train.Dim, train.Classes, s.EvalBatch); err != nil {
			return nil, err
		}
	}
	if s.AGD != nil {
		if s.Resume != nil {
			return nil, errors.New("sim: dp-agd cannot resume from a checkpoint")
		}
		if err := s.AGD.Validate(); err != nil {
			return nil, err
		}
		if err := r.agdModels(); err != nil {
			return nil, err
		}
	}
	r.theta = make([]float32, r.evals[0].NumParams())
	r.evals[0].Init(s.Root.Stream("init"))
	copy(r.theta, r.evals[0].Params())
	r.sum.Init = append([]float32(nil), r.theta...)
	r.update = make([]float32, len(r.theta))
	r.pool = newPool(s.Workers, len(r.theta))
	return r, nil
}

// resume restores the state of s.Resume, if any.
func (r *runner) resume() error {
	s, st := r.s, r.s.Resume
	if st == nil {
		return nil
	}
	if len(st.Params) != len(r.theta) {
		return fmt.Errorf("sim: checkpoint has %d parameters, the model has %d", len(st.Params), len(r.theta))
	}
	if st.Round < 0 || st.Round > len(s.Schedule.Rounds) {
		return fmt.Errorf("sim: checkpoint after round %d of a %d-round schedule", st.Round, len(s.Schedule.Rounds))
	}
	sk, ok := s.Aggregator.(Seeker)
	if !ok {
		return fmt.Errorf("sim: aggregator %T cannot resume mid-run", s.Aggregator)
	}
	if err := sk.Seek(st.Round); err != nil {
		return err
	}
	if sa, ok := s.Aggregator.(Stateful); ok {
		if err := sa.SetState(st.AggState); err != nil {
			return fmt.Errorf("sim: checkpoint: %w", err)
		}
	} else if len(st.AggState) > 0 {
		return fmt.Errorf("sim: checkpoint has aggregator state, aggregator %T keeps none", s.Aggregator)
	}
	if err := s.Server.SetState(st.Momentum, len(r.theta)); err != nil {
		return fmt.Errorf("sim: checkpoint: %w", err)
	}
	copy(r.theta, st.Params)
	r.saved = st.Round
	r.sum.Rounds, r.sum.FinalLoss, r.sum.FinalAcc, r.sum.BestAcc = st.Round, st.FinalLoss, st.FinalAcc, st.BestAcc
	return nil
}

// checkpoint saves the state after the rounds done, unless saved already.
func (r *runner) checkpoint() error {
	if r.s.Checkpoint == nil || r.sum.Rounds == r.saved {
		return nil
	}
	st := State{Round: r.sum.Rounds, Params: r.theta, FinalLoss: r.sum.FinalLoss, FinalAcc: r.sum.FinalAcc, BestAcc: r.sum.BestAcc}
	st.Momentum = r.s.Server.State()
	if sa, ok := r.s.Aggregator.(Stateful); ok {
		st.AggState = sa.State()
	}
	r.saved = r.sum.Rounds
	return r.s.Checkpoint(st)
}

// stop ends the run on an error, saving the progress when the context was
// cancelled.
func (r *runner) stop(ctx context.Context, err error) (Summary, error) {
	if ctx.Err() != nil {
		if cerr := r.checkpoint(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	return r.sum, err
}

// round trains, aggregates and applies round t, and evaluates it when due.
// stopErr ends the run with its progress saved (see stop); err ends it as
// it is (divergence, or a failed evaluation: the round is redone after a
// resume).
func (r *runner) round(ctx context.Context, t int) (rd Round, stopErr, err error) {
	s := r.s
	cohort := s.Schedule.Rounds[t]
	rd = Round{Round: t + 1, Cohort: len(cohort)}
	var lossSum float64
	var trainErr error
	trained := len(cohort) // clients trained on data (not canaries)
	var canary []bool
	if s.Canary != nil {
		canary = make([]bool, len(cohort))
	}
	deltas := r.pool.run(ctx, r.trainers, len(cohort), func(tr *clients.Trainer, i int, delta []float32) (float64, error) {
		id := cohort[i]
		if canary != nil && s.Canary(id, delta) {
			canary[i] = true // read after the iteration (ordered by the result channel)
			return 0, nil
		}
		res, err := tr.Update(delta, r.theta, s.Data.Train, s.Data.Clients[id], s.Root.Stream("client", uint64(t), uint64(id)))
		if errors.Is(err, clients.ErrDiverged) {
			for j := range delta {
				delta[j] = float32(math.NaN()) // the aggregator drops it (zero contribution)
			}
			return math.NaN(), nil
		}
		return res.Loss, err
	}, func(err error) { trainErr = err }, func(loss float64) { lossSum += loss })
	var rep aggregators.Report
	if s.AGD != nil {
		rep, err = s.AGD.Gradient(t, deltas, len(r.theta))
	} else {
		rep, err = aggregators.Aggregate(s.Aggregator, r.update, t, deltas)
	}
	for _, c := range canary {
		if c {
			trained--
		}
	}
	if err != nil {
		return rd, err, nil
	}
	if trainErr != nil {
		return rd, trainErr, nil
	}
	if err := ctx.Err(); err != nil {
		return rd, err, nil
	}
	if s.AGD != nil {
		if err := r.agdStep(ctx, t, cohort); err != nil {
			return rd, err, nil
		}
		rd.AGD = s.AGD.Last()
	} else {
		s.Server.Step(r.theta, r.update, t)
	}
	if !finite(r.theta) {
		return rd, nil, fmt.Errorf("%w after round %d", ErrDiverged, t+1)
	}
	rd.Report, rd.Update = rep, r.update
	if trained > 0 {
		rd.TrainLoss = lossSum / float64(trained)
	}
	last := t+1 == len(s.Schedule.Rounds) || (s.AGD != nil && !s.AGD.Affordable())
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

// pool trains a round's clients on the workers and yields their deltas in
// cohort order. At most 2·workers deltas are in memory at once.
type pool struct {
	workers int
	free    chan []float32
}

func newPool(workers, d int) *pool {
	p := &pool{workers: workers, free: make(chan []float32, 2*workers)}
	for i := 0; i < 2*workers; i++ {
		p.free <- make([]float32, d)
	}
	return p
}

type result struct {
	delta []float32
	loss  float64
	err   error
}

// run returns an iterator over the deltas of clients 0..n-1, computed by
// train on the workers. The first training error is passed to onErr and ends
// the iteration; losses are passed to onLoss in cohort order.
func (p *pool) run(ctx context.Context, trainers []*clients.Trainer, n int,
	train func(tr *clients.Trainer, i int, delta []float32) (float64, error),
	onErr func(err error), onLoss func(float64)) iter.Seq[[]float32] {
	return func(yield func([]float32) bool) {
		ctx, cancel := context.WithCancel(ctx)
		type job struct {
			i     int
			delta []float32
		}
		jobs := make(chan job)
		done := make([]chan result, n)
		for i := range done {
			done[i] = make(chan result, 1)
		}
		var wg sync.WaitGroup
		go func() { // dispatcher: hands out buffers in cohort order
			defer close(jobs)
			for i := 0; i < n; i++ {
				var buf []float32
				select {
				case buf = <-p.free:
				case <-ctx.Done():
					return
				}
				select {
				case jobs <- job{i, buf}:
				case <-ctx.Done():
					p.free <- buf
					return
				}
			}
		}()
		for w := 0; w < p.workers; w++ {
			wg.Add(1)
			go func(tr *clients.Trainer) {
				defer wg.Done()
				for j := range jobs {
					loss, err := train(tr, j.i, j.delta)
					done[j.i] <- result{delta: j.delta, loss: loss, err: err}
				}
			}(trainers[w])
		}
		defer func() {
			cancel()
			wg.Wait()
			// Return every buffer still held by finished jobs.
			for i := range done {
				select {
				case r := <-done[i]:
					p.free <- r.delta
				default:
				}
			}
		}()
		for i := 0; i < n; i++ {
			var r result
			select {
			case r = <-done[i]:
			case <-ctx.Done():
				return
			}
			if r.err != nil {
				p.free <- r.delta
				onErr(r.err)
				return
			}
			onLoss(r.loss)
			ok := yield(r.delta)
			p.free <- r.delta
			if !ok {
				return
			}
		}
	}
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
