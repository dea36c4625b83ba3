package sim

import (
	"context"
	"errors"
	"math"
	"sync"

	"dpfl/datasets"
	"dpfl/models"
)

// agdState is what DP-AGD's rounds need besides the training: one loss
// model per worker (batches of a client's examples), the step direction and
// the candidate parameters.
type agdState struct {
	models []models.Model
	batch  int
	dir    []float32
}

// maxLossBatch bounds the rows of DP-AGD's per-client loss batches.
const maxLossBatch = 256

// agdModels builds the loss models: batches as large as the largest
// client (at most maxLossBatch rows; larger clients are scored in chunks).
func (r *runner) agdModels() error {
	s := r.s
	b := 1
	for _, c := range s.Data.Clients {
		b = max(b, len(c))
	}
	b = min(b, maxLossBatch)
	st := &agdState{batch: b, models: make([]models.Model, s.Workers)}
	for w := range st.models {
		m, err := s.Model.Build(s.Data.Train.Dim, s.Data.Train.Classes, b)
		if err != nil {
			return err
		}
		st.models[w] = m
	}
	r.agd = st
	return nil
}

// agdStep chooses and takes round t's step (aggregators.AGD): noisy maxes
// over the cohort's clipped losses at the candidates, re-measuring the
// gradient while "no step" wins and the budget allows.
func (r *runner) agdStep(ctx context.Context, t int, cohort []int) error {
	a, st := r.s.AGD, r.agd
	if len(st.dir) != len(r.theta) {
		st.dir = make([]float32, len(r.theta))
	}
	for {
		a.Direction(st.dir)
		alphas := a.Candidates()
		losses, err := r.cohortLosses(ctx, cohort, alphas)
		if err != nil {
			return err
		}
		j, err := a.Choose(t, losses)
		if err != nil {
			return err
		}
		if j > 0 {
			step := float32(alphas[j])
			for i, u := range st.dir {
				r.theta[i] -= step * u
			}
			return nil
		}
		ok, err := a.Remeasure(t)
		if err != nil || !ok {
			return err
		}
	}
}

// cohortLosses returns, for each candidate step α_j, Σ_i min(L_i(θ − α_j u),
// LossClip) over the cohort in order, L_i the mean loss of client i's
// training examples (a non-finite loss counts LossClip). Candidates are
// shared out among the workers; each sums its candidate's losses in cohort
// order, so the sums do not depend on the worker count.
func (r *runner) cohortLosses(ctx context.Context, cohort []int, alphas []float64) ([]float64, error) {
	s, st := r.s, r.agd
	out := make([]float64, len(alphas))
	errs := make([]error, len(st.models))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w, m := range st.models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := datasets.NewBatch(st.batch, s.Data.Train.Dim)
			for {
				mu.Lock()
				j := next
				next++
				mu.Unlock()
				if j >= len(alphas) || ctx.Err() != nil {
					return
				}
				p := m.Params()
				step := float32(alphas[j])
				for i, x := range r.theta {
					p[i] = x - step*st.dir[i]
				}
				var sum float64
				for _, id := range cohort {
					l, err := clientLoss(m, b, s.Data.Train, s.Data.Clients[id])
					if err != nil {
						errs[w] = err
						return
					}
					if math.IsNaN(l) || l > s.AGD.LossClip {
						l = s.AGD.LossClip
					}
					sum += max(l, 0)
				}
				out[j] = sum
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, ctx.Err()
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
