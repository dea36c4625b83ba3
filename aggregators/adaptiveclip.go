package aggregators

import (
	"fmt"
	"iter"
	"math"

	"dpfl/sim/rng"
)

// AdaptiveClip is quantile-based adaptive clipping (Andrew, Thakkar,
// McMahan and Ramaswamy 2021, "Differentially Private Learning with
// Adaptive Clipping", Algorithm 1 with the geometric update) around a
// mechanism's aggregator. In round t it clips at C_t, adds the update noise
// at std NoiseScale·C_t (the mechanism's noise per unit clip, so the noise
// multiplier relative to the clip stays fixed), and releases the noisy
// count of unclipped clients
//
//	b̄_t = (Σ_i (b_i − ½) + N(0, CountStd²)) / Denominator + ½,   b_i = 1[‖Δ_i‖ ≤ C_t]
//
// (a dropped client contributes 0 to the centered sum: zero-out adjacency,
// so one client changes it by at most ½), then sets
//
//	C_{t+1} = C_t · exp(−LR · (b̄_t − Quantile)).
//
// The count's noise in round t is drawn from the stream ("clipcount", t).
// C_t is a function of the earlier rounds' noisy counts only, so the clip
// norm is public. Privacy: see the package documentation (adaptive
// clipping) and Mechanism.CountEvent.
type AdaptiveClip struct {
	Inner       *Correlated // its Clip and NoiseStd are set every round
	NoiseScale  float64     // update noise std per unit of clip norm (Mechanism.NoiseStd(1, sigma))
	Quantile    float64     // target quantile γ in (0, 1)
	LR          float64     // η_C > 0
	CountStd    float64     // σ_b ≥ 0
	Denominator float64     // fixed divisor of the count (the mechanism's)
	Root        rng.Root
	clip        float64 // C_t
}

// NewAdaptiveClip returns adaptive clipping starting at clip norm clip.
func NewAdaptiveClip(inner *Correlated, clip, noiseScale, quantile, lr, countStd, denominator float64, root rng.Root) (*AdaptiveClip, error) {
	a := &AdaptiveClip{Inner: inner, NoiseScale: noiseScale, Quantile: quantile, LR: lr, CountStd: countStd, Denominator: denominator, Root: root, clip: clip}
	switch {
	case !(clip > 0) || math.IsInf(clip, 0):
		return nil, fmt.Errorf("aggregators: adaptive clipping: initial clip norm %v must be positive", clip)
	case !(quantile > 0 && quantile < 1):
		return nil, fmt.Errorf("aggregators: adaptive clipping: target quantile %v must be in (0, 1)", quantile)
	case !(lr > 0) || math.IsInf(lr, 0):
		return nil, fmt.Errorf("aggregators: adaptive clipping: learning rate %v must be positive", lr)
	case !(countStd >= 0) || math.IsInf(countStd, 0) || !(noiseScale >= 0) || !(denominator > 0):
		return nil, fmt.Errorf("aggregators: adaptive clipping: count std %v, noise scale %v, denominator %v", countStd, noiseScale, denominator)
	case inner == nil:
		return nil, fmt.Errorf("aggregators: adaptive clipping without an aggregator")
	}
	return a, nil
}

// Clip returns the clip norm the next round uses.
func (a *AdaptiveClip) Clip() float64 { return a.clip }

// ClipNorm implements Aggregator: C_t, the clip norm of the next round,
// or an error when it has left the float64 range.
func (a *AdaptiveClip) ClipNorm(round int) (float64, error) {
	if !(a.clip > 0) || math.IsInf(a.clip, 0) || math.IsInf(a.NoiseScale*a.clip, 0) {
		// A geometric step too large for the count's spread (a large
		// learning rate, or count noise far above the denominator) sends
		// the clip norm to 0 or beyond the float64 range.
		return 0, fmt.Errorf("aggregators: adaptive clipping: the clip norm reached %v before round %d (aggregator.clip_lr %g, aggregator.clip_count_stddev %g against a denominator of %g clients): lower clip_lr or clip_count_stddev", a.clip, round, a.LR, a.CountStd, a.Denominator)
	}
	return a.clip, nil
}

// Privatize implements Aggregator: the inner aggregator at clip C_t, then
// the noisy count and the clip update. Report.ClipNorm is C_t.
func (a *AdaptiveClip) Privatize(dst []float32, round int, sum *ClippedSum) (Report, error) {
	if _, err := a.ClipNorm(round); err != nil {
		return Report{}, err
	}
	a.Inner.Clip, a.Inner.NoiseStd = a.clip, a.NoiseScale*a.clip
	rep, err := a.Inner.Privatize(dst, round, sum)
	rep.ClipNorm = a.clip
	if err != nil {
		return rep, err
	}
	a.clip = a.next(rep, round)
	return rep, nil
}

// Aggregate clips, sums and privatizes one round's deltas (the function
// Aggregate).
func (a *AdaptiveClip) Aggregate(dst []float32, round int, deltas iter.Seq[[]float32]) (Report, error) {
	return Aggregate(a, dst, round, deltas)
}

// next is C_{t+1} after round t's report.
func (a *AdaptiveClip) next(rep Report, round int) float64 {
	finite := rep.Clients - rep.Dropped
	centered := float64(finite-rep.Clipped) - float64(finite)/2
	if a.CountStd > 0 {
		centered += a.CountStd * a.Root.Stream("clipcount", uint64(round)).NormFloat64()
	}
	b := centered/a.Denominator + 0.5
	return a.clip * math.Exp(-a.LR*(b-a.Quantile))
}

// Seek implements the resume of the inner aggregator's noise; the clip
// norm is restored by SetState.
func (a *AdaptiveClip) Seek(t int) error { return a.Inner.Seek(t) }

// State returns the clip norm of the next round (for checkpoints).
func (a *AdaptiveClip) State() []float64 { return []float64{a.clip} }

// SetState restores a clip norm saved by State.
func (a *AdaptiveClip) SetState(s []float64) error {
	if len(s) != 1 || !(s[0] > 0) || math.IsInf(s[0], 0) {
		return fmt.Errorf("aggregators: adaptive clipping state %v is not one positive clip norm", s)
	}
	a.clip = s[0]
	return nil
}
