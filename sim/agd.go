package sim

import (
	"context"
	"errors"

	"dpfl/aggregators"
)

// AGD is DP-AGD (aggregators.AGD) as a round algorithm: the gradient is
// the cohort's clipped sum from the executor, each round's step is chosen
// by noisy maxes over the cohort's clipped losses at the candidate steps
// (Executor.Losses), and the run ends when the ledger cannot pay for
// another round. It cannot resume from a checkpoint.
type AGD struct {
	AGD *aggregators.AGD

	sum         *aggregators.ClippedSum
	dir, update []float32
}

var _ Algorithm = (*AGD)(nil)

// NewAGD returns the algorithm of the controller a.
func NewAGD(a *aggregators.AGD) *AGD { return &AGD{AGD: a} }

// Start implements Algorithm.
func (g *AGD) Start(d int, st *State) error {
	if st != nil {
		return errors.New("sim: dp-agd cannot resume from a checkpoint")
	}
	if err := g.AGD.Validate(); err != nil {
		return err
	}
	g.sum = aggregators.NewClippedSum(d, g.AGD.Clip)
	g.dir, g.update = make([]float32, d), make([]float32, d)
	return nil
}

// More implements Algorithm: a round runs while its gradient and a noisy
// max fit in the budget.
func (g *AGD) More() bool { return g.AGD.Affordable() }

// Save implements Algorithm (nothing: DP-AGD is not checkpointed).
func (g *AGD) Save(*State) {}

// Round implements Algorithm. Step.Update is zero: DP-AGD releases no
// aggregate of the updates, only its step.
func (g *AGD) Round(ctx context.Context, ex Executor, t int, cohort []int, theta []float32) (Step, error) {
	a := g.AGD
	var st Step
	if err := a.CheckRound(t); err != nil {
		return st, err
	}
	g.sum.Reset(a.Clip)
	var err error
	if st.Train, err = ex.Train(ctx, Job{Round: t, Params: theta, Clients: cohort}, g.sum); err != nil {
		return st, err
	}
	if st.Report, err = a.Release(t, g.sum); err != nil {
		return st, err
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if err := g.step(ctx, ex, t, cohort, theta); err != nil {
		return st, err
	}
	st.AGD, st.Update = a.Last(), g.update
	return st, nil
}

// step chooses and takes round t's step: noisy maxes over the cohort's
// clipped losses at the candidates, re-measuring the gradient while "no
// step" wins and the budget allows.
func (g *AGD) step(ctx context.Context, ex Executor, t int, cohort []int, theta []float32) error {
	a := g.AGD
	for {
		a.Direction(g.dir)
		alphas := a.Candidates()
		each, err := ex.Losses(ctx, Candidates{Theta: theta, Dir: g.dir, Steps: alphas}, cohort, a.LossClip)
		if err != nil {
			return err
		}
		losses := make([]float64, len(each))
		for i, l := range each {
			losses[i] = SumInOrder(l)
		}
		j, err := a.Choose(t, losses)
		if err != nil {
			return err
		}
		if j > 0 {
			step := float32(alphas[j])
			for i, u := range g.dir {
				theta[i] -= step * u
			}
			return nil
		}
		ok, err := a.Remeasure(t)
		if err != nil || !ok {
			return err
		}
	}
}
