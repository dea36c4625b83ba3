package aggregators

import (
	"fmt"
	"iter"
	"math"

	"dpfl/sim/rng"
)

// Report describes one round's aggregation.
type Report struct {
	Clients   int     // deltas received
	Clipped   int     // deltas whose norm exceeded Clip
	Dropped   int     // deltas rejected as non-finite (contribute zero)
	MeanNorm  float64 // mean pre-clip L2 norm of the finite deltas
	NoiseStd  float64 // per-coordinate noise std added to the sum
	NoiseNorm float64 // L2 norm of the noise added to the sum
}

// ClipFraction reports the fraction of received deltas that were clipped.
func (r Report) ClipFraction() float64 {
	if r.Clients == 0 {
		return 0
	}
	return float64(r.Clipped) / float64(r.Clients)
}

// Aggregator privatizes one round's deltas.
type Aggregator interface {
	// Aggregate consumes the round's deltas in order, and writes
	// (Σ clip(delta) + noise_round) / expected cohort into dst.
	Aggregate(dst []float32, round int, deltas iter.Seq[[]float32]) (Report, error)
}

// ClipL2 scales v in place to L2 norm at most clip and returns its norm
// before clipping. A non-finite norm is returned as is and v is left alone.
func ClipL2(v []float32, clip float64) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := math.Sqrt(s)
	if n > clip && !math.IsInf(n, 0) && !math.IsNaN(n) {
		f := float32(clip / n)
		for i := range v {
			v[i] *= f
		}
	}
	return n
}

// DPFedAvg adds independent Gaussian noise N(0, NoiseStd² I) to the clipped
// sum in every round.
type DPFedAvg struct {
	Clip           float64 // L2 bound on each client's delta
	NoiseStd       float64 // per-coordinate std of the noise on the sum (sigma · clip · sensitivity)
	ExpectedCohort float64 // fixed denominator (the target cohort, or q·N under Poisson sampling)
	Root           rng.Root

	sum   []float64
	noise []float64
}

var _ Aggregator = (*DPFedAvg)(nil)

// Aggregate implements Aggregator.
func (a *DPFedAvg) Aggregate(dst []float32, round int, deltas iter.Seq[[]float32]) (Report, error) {
	if !(a.Clip > 0) || a.NoiseStd < 0 || a.ExpectedCohort <= 0 {
		return Report{}, fmt.Errorf("aggregators: dpfedavg needs clip > 0, noise std >= 0, expected cohort > 0 (have %v, %v, %v)", a.Clip, a.NoiseStd, a.ExpectedCohort)
	}
	d := len(dst)
	if len(a.sum) != d {
		a.sum, a.noise = make([]float64, d), make([]float64, d)
	}
	rep := sumClipped(a.sum, a.Clip, deltas)
	rep.NoiseStd = a.NoiseStd
	if a.NoiseStd > 0 {
		rng.FillNormal(a.noise, a.Root.Stream("noise", uint64(round)))
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

// sumClipped clips each delta in place and accumulates it into sum (zeroed
// first), in the order given. Non-finite deltas are dropped.
func sumClipped(sum []float64, clip float64, deltas iter.Seq[[]float32]) Report {
	clear(sum)
	var rep Report
	var norms float64
	for v := range deltas {
		if len(v) != len(sum) {
			panic(fmt.Sprintf("aggregators: delta of length %d for a model of %d parameters", len(v), len(sum)))
		}
		rep.Clients++
		n := ClipL2(v, clip)
		if math.IsNaN(n) || math.IsInf(n, 0) {
			rep.Dropped++
			continue
		}
		norms += n
		if n > clip {
			rep.Clipped++
		}
		for i, x := range v {
			sum[i] += float64(x)
		}
	}
	if finite := rep.Clients - rep.Dropped; finite > 0 {
		rep.MeanNorm = norms / float64(finite)
	}
	return rep
}
