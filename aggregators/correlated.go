package aggregators

import (
	"fmt"
	"iter"
	"math"
)

// Correlated is the matrix-mechanism aggregator (Choquette-Choo et al. 2023 Alg. 1 in
// gradient space): round t's privatized sum is Σ clip(Δ_i) + NoiseStd · w_t,
// with w_t the t-th row of C⁻¹Z streamed by Noise, divided by the fixed
// expected cohort. NoiseStd = sigma · clip · sens(C) with sigma normalized to
// sensitivity 1; the decoder is the server optimizer (post-processing).
// DP-FedAvg is the case C = I (IdentityNoise).
type Correlated struct {
	Clip           float64
	NoiseStd       float64
	ExpectedCohort float64
	Noise          NoiseSource

	noise, noisy []float64
}

var _ Aggregator = (*Correlated)(nil)

func (a *Correlated) check() error {
	if !(a.Clip > 0) || a.NoiseStd < 0 || !(a.ExpectedCohort > 0) || a.Noise == nil {
		return fmt.Errorf("aggregators: correlated aggregator needs clip > 0, noise std >= 0, expected cohort > 0 and a noise source")
	}
	return nil
}

// ClipNorm implements Aggregator: the fixed Clip.
func (a *Correlated) ClipNorm(int) (float64, error) { return a.Clip, a.check() }

// Privatize implements Aggregator.
func (a *Correlated) Privatize(dst []float32, round int, sum *ClippedSum) (Report, error) {
	if err := a.check(); err != nil {
		return Report{}, err
	}
	d := len(dst)
	if sum.Len() != d || sum.Clip() != a.Clip {
		return Report{}, fmt.Errorf("aggregators: round %d: a sum of %d coordinates clipped at %v for a model of %d parameters clipped at %v", round, sum.Len(), sum.Clip(), d, a.Clip)
	}
	rep := sum.Report()
	rep.NoiseStd = a.NoiseStd
	v := sum.Vector()
	if a.NoiseStd > 0 {
		if len(a.noise) != d {
			a.noise, a.noisy = make([]float64, d), make([]float64, d)
		}
		if err := a.Noise.Next(a.noise, round); err != nil {
			return rep, err
		}
		var nn float64
		for i, z := range a.noise {
			e := a.NoiseStd * z
			a.noisy[i] = v[i] + e
			nn += e * e
		}
		rep.NoiseNorm = math.Sqrt(nn)
		v = a.noisy
	}
	inv := 1 / a.ExpectedCohort
	for i, s := range v {
		dst[i] = float32(s * inv)
	}
	return rep, nil
}

// Aggregate clips, sums and privatizes one round's deltas (the function
// Aggregate).
func (a *Correlated) Aggregate(dst []float32, round int, deltas iter.Seq[[]float32]) (Report, error) {
	return Aggregate(a, dst, round, deltas)
}

// Seek prepares the aggregator to resume at round t (see NoiseSource.Seek):
// its noise from round t on is bit-identical to an uninterrupted run's.
func (a *Correlated) Seek(t int) error {
	if a.Noise == nil {
		return fmt.Errorf("aggregators: correlated aggregator without a noise source")
	}
	return a.Noise.Seek(t)
}
