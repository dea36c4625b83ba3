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
	ClipNorm  float64 // adaptive clipping: the clip norm of the round (0: fixed clip)
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

// NewDPFedAvg returns DP-FedAvg: independent Gaussian noise N(0, noiseStd² I)
// on the clipped sum in every round (the matrix mechanism with C = I), round
// t's noise drawn from the stream ("noise", t).
func NewDPFedAvg(clip, noiseStd, expectedCohort float64, root rng.Root) *Correlated {
	return &Correlated{Clip: clip, NoiseStd: noiseStd, ExpectedCohort: expectedCohort, Noise: NewIdentityNoise(root)}
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
