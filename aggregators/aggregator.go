package aggregators

import (
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

// Aggregator is a mechanism that privatizes one round's sum of clipped
// updates: the executor clips each client's update at ClipNorm(round) and
// sums them into a ClippedSum, and Privatize adds the round's noise and
// divides by the fixed denominator.
type Aggregator interface {
	// ClipNorm returns the clip norm of round t's updates, known before
	// they are trained (adaptive clipping's depends on earlier rounds), or
	// an error when round t cannot run.
	ClipNorm(t int) (float64, error)
	// Privatize writes (sum + noise_t) / expected cohort into dst. The sum
	// must be clipped at ClipNorm(t); it is not modified.
	Privatize(dst []float32, t int, sum *ClippedSum) (Report, error)
}

// Aggregate is one round of a on deltas given in order: it clips and sums
// them (ClippedSum) at a's clip norm, then privatizes the sum.
func Aggregate(a Aggregator, dst []float32, round int, deltas iter.Seq[[]float32]) (Report, error) {
	clip, err := a.ClipNorm(round)
	if err != nil {
		return Report{}, err
	}
	sum := NewClippedSum(len(dst), clip)
	sum.AddAll(deltas)
	return a.Privatize(dst, round, sum)
}

// norm2 returns the L2 norm of v, its squares summed in float64 in order.
func norm2(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// ClipL2 scales v in place to L2 norm at most clip and returns its norm
// before clipping. A non-finite norm is returned as is and v is left alone.
func ClipL2(v []float32, clip float64) float64 {
	n := norm2(v)
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
