package sim

import (
	"context"
	"errors"
	"iter"
	"math"
	"sync"

	"dpfl/aggregators"
	"dpfl/clients"
	"dpfl/datasets"
	"dpfl/models"
	"dpfl/sim/rng"
)

// Executor trains cohorts: it is where the clients' computation happens.
// Pool, a pool of goroutines in this process, is the one the loop uses by
// default; an executor that trains the clients elsewhere (other processes
// or machines) and hands back their clipped sum is another implementation.
// An executor must be deterministic: a client's update depends only on the
// job, the client and the run's root (its stream ("client", round, id)).
type Executor interface {
	// Train trains the job's clients and adds each one's update, clipped
	// at sum.Clip(), to sum in the job's client order (ClippedSum.Add, or
	// ClippedSum.Merge of partial sums). It returns the cohort's training
	// losses; on an error the sum is incomplete.
	Train(ctx context.Context, job Job, sum *aggregators.ClippedSum) (Trained, error)
	// Losses returns, for each step α_j of c, the clients' losses
	// min(L_i(θ − α_j u), clip) in client order, L_i the mean loss of
	// client i's training examples clamped to [0, clip] (a non-finite loss
	// counts clip): DP-AGD's candidate losses, summed by the caller in
	// client order (SumInOrder), so that any split of the clients gives
	// the same sums.
	Losses(ctx context.Context, c Candidates, clients []int, clip float64) ([][]float64, error)
}

// Job is one round's training: the clients, in cohort order, trained from
// the global model Params (read only). With Parts > 1 the clients are part
// Part (0 ≤ Part < Parts) of the round's cohort of n, its clients
// ⌊n·Part/Parts⌋ … ⌊n·(Part+1)/Parts⌋−1 (sim.Ranks' split), and an
// executor that prefetches the next cohort prefetches the same part of it.
type Job struct {
	Round       int
	Params      []float32
	Clients     []int
	Part, Parts int
}

// Trained is what training a cohort reports besides its clipped sum.
type Trained struct {
	// Losses are the mean local training losses of the clients trained on
	// data (canaries excluded), in cohort order (NaN for one that
	// diverged). They are few (one per client), so they travel whole and
	// are summed in cohort order (SumInOrder): the round's training loss
	// does not depend on how the cohort was split.
	Losses []float64
}

// Merge appends the losses of the next part of the cohort (o's clients
// follow t's in cohort order).
func (t *Trained) Merge(o Trained) {
	t.Losses = append(t.Losses, o.Losses...)
}

// SumInOrder is the float64 sum of xs from the first to the last: one
// fixed order, so the same values give the same bits however they were
// computed.
func SumInOrder(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// Candidates are models θ − α_j u along a direction u (DP-AGD's step
// candidates): Theta and Dir have the model's length, Steps are the α_j.
type Candidates struct {
	Theta, Dir []float32
	Steps      []float64
}

// Pool is the executor of one process: a trainer per worker goroutine;
// each client's delta lands in its own buffer and the deltas are added to
// the sum in cohort order, so the result does not depend on the number of
// workers. It reads a cohort's examples through the data's
// datasets.ClientData (Fetch, then Examples by client), fetching the
// schedule's next cohort meanwhile, so a streamed population holds only
// the current and the next cohort.
type Pool struct {
	data    *datasets.Federated
	src     datasets.ClientData // the clients' examples, fetched by cohort
	sched   [][]int             // the planned cohorts (the next one is prefetched)
	model   models.Spec
	root    rng.Root
	canary  func(id int, delta []float32) bool
	workers []*clients.Trainer
	bufs    *pool

	lossModels []models.Model // DP-AGD's loss models, built on first use
	lossBatch  int

	// With frozen tensors (freeze): the trained part, the global model
	// with the frozen tensors' values (the trained ones set from each
	// job's Params, which hold only those) and a direction buffer.
	trainable *models.Trainable
	full, dir []float32
	compact   []float32
}

// freeze makes p train only t's coordinates: jobs' Params and candidates
// hold those, the frozen ones are init's, and the clients' updates are
// summed over the trained coordinates.
func (p *Pool) freeze(t *models.Trainable, init []float32) {
	p.trainable = t
	p.full = append([]float32(nil), init...)
	p.dir = make([]float32, len(init))
	p.compact = make([]float32, t.Len())
	for _, w := range p.workers {
		w.Freeze(t.Frozen())
	}
}

var _ Executor = (*Pool)(nil)

// NewPool returns the pool of s.Workers trainers for the data, model,
// client training, root and canaries (Spec.Canary) of s.
func NewPool(s Spec) (*Pool, error) {
	train := s.Data.Train
	p := &Pool{data: s.Data, src: s.Data.Cohorts(), model: s.Model, root: s.Root, canary: s.Canary, workers: make([]*clients.Trainer, max(1, s.Workers))}
	if s.Schedule != nil {
		p.sched = s.Schedule.Rounds
	}
	for w := range p.workers {
		m, err := s.Model.Build(train.Dim, train.Classes, s.Client.BatchSize)
		if err != nil {
			return nil, err
		}
		if p.workers[w], err = clients.NewTrainer(m, train.Dim, s.Client); err != nil {
			return nil, err
		}
		if w == 0 {
			p.bufs = newPool(len(p.workers), m.NumParams())
		}
	}
	return p, nil
}

// Train implements Executor.
func (p *Pool) Train(ctx context.Context, job Job, sum *aggregators.ClippedSum) (Trained, error) {
	cohort := job.Clients
	var next []int
	if job.Round+1 < len(p.sched) {
		next = p.sched[job.Round+1]
		if job.Parts > 1 {
			n := len(next)
			next = next[n*job.Part/job.Parts : n*(job.Part+1)/job.Parts]
		}
	}
	if err := p.src.Fetch(ctx, cohort, next); err != nil {
		return Trained{}, err
	}
	losses := make([]float64, 0, len(cohort))
	var trainErr error
	var canary []bool
	if p.canary != nil {
		canary = make([]bool, len(cohort))
	}
	if p.trainable != nil {
		p.trainable.Scatter(p.full, job.Params)
		job.Params = p.full
	}
	deltas := p.bufs.run(ctx, p.workers, len(cohort), func(tr *clients.Trainer, i int, delta []float32) (float64, error) {
		id := cohort[i]
		if canary != nil && p.canary(id, delta) {
			canary[i] = true // read after the iteration (ordered by the result channel)
			return 0, nil
		}
		d, idx := p.src.Examples(id)
		res, err := tr.Update(delta, job.Params, d, idx, p.root.Stream("client", uint64(job.Round), uint64(id)))
		if errors.Is(err, clients.ErrDiverged) {
			for j := range delta {
				delta[j] = float32(math.NaN()) // the sum drops it (zero contribution)
			}
			return math.NaN(), nil
		}
		return res.Loss, err
	}, func(err error) { trainErr = err }, func(loss float64) { losses = append(losses, loss) })
	if t := p.trainable; t != nil {
		full := deltas
		deltas = func(yield func([]float32) bool) {
			for v := range full {
				t.Gather(p.compact, v)
				if !yield(p.compact) {
					return
				}
			}
		}
	}
	sum.AddAll(deltas)
	out := Trained{Losses: losses[:0]}
	for i, l := range losses {
		if canary == nil || !canary[i] {
			out.Losses = append(out.Losses, l)
		}
	}
	if trainErr != nil {
		return out, trainErr
	}
	return out, ctx.Err()
}

// maxLossBatch bounds the rows of the per-client loss batches.
const maxLossBatch = 256

// buildLossModels builds the loss models: batches as large as the largest
// client (at most maxLossBatch rows; larger clients are scored in chunks).
func (p *Pool) buildLossModels() error {
	if p.lossModels != nil {
		return nil
	}
	b := 1
	for id := range p.data.NumClients() {
		b = max(b, p.src.Len(id))
	}
	b = min(b, maxLossBatch)
	ms := make([]models.Model, len(p.workers))
	for w := range ms {
		m, err := p.model.Build(p.data.Train.Dim, p.data.Train.Classes, b)
		if err != nil {
			return err
		}
		ms[w] = m
	}
	p.lossModels, p.lossBatch = ms, b
	return nil
}

// Losses implements Executor. Candidates are shared out among the workers;
// each sums its candidate's losses in cohort order, so the sums do not
// depend on the worker count.
func (p *Pool) Losses(ctx context.Context, c Candidates, cohort []int, clip float64) ([][]float64, error) {
	if err := p.buildLossModels(); err != nil {
		return nil, err
	}
	if t := p.trainable; t != nil {
		// The frozen coordinates: init's values, and no step along them.
		t.Scatter(p.full, c.Theta)
		t.Scatter(p.dir, c.Dir)
		c.Theta, c.Dir = p.full, p.dir
	}
	if err := p.src.Fetch(ctx, cohort, nil); err != nil {
		return nil, err
	}
	out := make([][]float64, len(c.Steps))
	errs := make([]error, len(p.lossModels))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w, m := range p.lossModels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := datasets.NewBatch(p.lossBatch, p.data.Train.Dim)
			for {
				mu.Lock()
				j := next
				next++
				mu.Unlock()
				if j >= len(c.Steps) || ctx.Err() != nil {
					return
				}
				out[j], errs[w] = p.candidateLoss(m, b, c, j, cohort, clip)
				if errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, ctx.Err()
}

// candidateLoss is the cohort's clipped losses at candidate j, on model m.
func (p *Pool) candidateLoss(m models.Model, b *datasets.Batch, c Candidates, j int, cohort []int, clip float64) ([]float64, error) {
	params := m.Params()
	step := float32(c.Steps[j])
	for i, x := range c.Theta {
		params[i] = x - step*c.Dir[i]
	}
	out := make([]float64, len(cohort))
	for i, id := range cohort {
		d, idx := p.src.Examples(id)
		l, err := clientLoss(m, b, d, idx)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(l) || l > clip {
			l = clip
		}
		out[i] = max(l, 0)
	}
	return out, nil
}

// clientLoss is the mean loss of model m on the examples idx of d, scored
// in batches of b's rows (0 for a client without examples).
func clientLoss(m models.Model, b *datasets.Batch, d *datasets.Dataset, idx []int) (float64, error) {
	var total models.Score
	for lo := 0; lo < len(idx); lo += b.Size {
		b.Fill(d, idx[lo:min(lo+b.Size, len(idx))])
		sc, err := m.Eval(b)
		if err != nil {
			return 0, err
		}
		total.Add(sc)
	}
	if total.Count == 0 {
		return 0, nil
	}
	return total.LossSum / float64(total.Count), nil
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
