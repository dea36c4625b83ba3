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

	sum, noise []float64
}

var _ Aggregator = (*Correlated)(nil)

// Aggregate implements Aggregator.
func (a *Correlated) Aggregate(dst []float32, round int, deltas iter.Seq[[]float32]) (Report, error) {
	if !(a.Clip > 0) || a.NoiseStd < 0 || !(a.ExpectedCohort > 0) || a.Noise == nil {
		return Report{}, fmt.Errorf("aggregators: correlated aggregator needs clip > 0, noise std >= 0, expected cohort > 0 and a noise source")
	}
	d := len(dst)
	if len(a.sum) != d {
		a.sum, a.noise = make([]float64, d), make([]float64, d)
	}
	rep := sumClipped(a.sum, a.Clip, deltas)
	rep.NoiseStd = a.NoiseStd
	if a.NoiseStd > 0 {
		if err := a.Noise.Next(a.noise, round); err != nil {
			return rep, err
		}
		var nn float64
		for i, z := range a.noise {
			e := a.NoiseStd * z
			a.sum[i] += e
			nn += e * e
		}
		rep.NoiseNorm = math.Sqrt(nn)
	}
	inv := 1 / a.ExpectedCohort
	for i, s := range a.sum {
		dst[i] = float32(s * inv)
	}
	return rep, nil
}

// Seek prepares the aggregator to resume at round t (see NoiseSource.Seek):
// its noise from round t on is bit-identical to an uninterrupted run's.
func (a *Correlated) Seek(t int) error {
	if a.Noise == nil {
		return fmt.Errorf("aggregators: correlated aggregator without a noise source")
	}
	return a.Noise.Seek(t)
}
