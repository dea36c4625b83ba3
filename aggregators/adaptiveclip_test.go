package aggregators

import (
	"math"
	"slices"
	"testing"

	"dpfl/sim/rng"
)

// lognormalNorms draws n update norms exp(N(mu, s²)) for round t.
func lognormalNorms(root rng.Root, t, n int, mu, s float64) [][]float32 {
	r := root.Stream("norms", uint64(t))
	out := make([][]float32, n)
	for i := range out {
		out[i] = []float32{float32(math.Exp(mu + s*r.NormFloat64()))}
	}
	return out
}

// runAdaptive runs rounds of adaptive clipping on lognormal norms and
// returns the clip norms used.
func runAdaptive(t *testing.T, quantile, lr float64, rounds int) []float64 {
	t.Helper()
	const m = 100
	inner := NewDPFedAvg(1, 0, m, rng.New(1))
	a, err := NewAdaptiveClip(inner, 0.01, 0, quantile, lr, m/20.0, m, rng.New(2))
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 1)
	var clips []float64
	for r := 0; r < rounds; r++ {
		rep, err := a.Aggregate(dst, r, seqOf(lognormalNorms(rng.New(3), r, m, 0, 1)))
		if err != nil {
			t.Fatal(err)
		}
		clips = append(clips, rep.ClipNorm)
	}
	return clips
}

// TestAdaptiveClipConverges: on update norms drawn from a lognormal
// distribution (log-norm N(0, 1), so the γ-quantile is exp(Φ⁻¹(γ))), the
// clip norm of Andrew et al.'s geometric update, started 100× too small,
// with η_C = 0.2 and count noise σ_b = m/20, settles at the target
// quantile: over the last 200 of 500 rounds the geometric mean clip is
// within 5% of exp(Φ⁻¹(γ)) for γ = 0.2, 0.5, 0.8 (the update's
// stationary spread, from the count noise σ_b/m = 0.05 and sampling of 100
// norms, is about ±0.1 in log; averaging 200 rounds shrinks it). Negative
// controls: with η_C = 0 the clip never moves, and the γ = 0.2 and γ = 0.8
// clips are far apart.
func TestAdaptiveClipConverges(t *testing.T) {
	got := map[float64]float64{}
	for _, q := range []float64{0.2, 0.5, 0.8} {
		clips := runAdaptive(t, q, 0.2, 500)
		var logSum float64
		for _, c := range clips[300:] {
			logSum += math.Log(c)
		}
		mean := math.Exp(logSum / 200)
		want := math.Exp(math.Sqrt2 * math.Erfinv(2*q-1))
		if math.Abs(mean/want-1) > 0.05 {
			t.Errorf("γ = %g: clip settles at %.4g, the quantile is %.4g", q, mean, want)
		}
		t.Logf("γ = %g: clip %.4g, quantile %.4g", q, mean, want)
		got[q] = mean
	}
	if !(got[0.8] > 3*got[0.2]) {
		t.Errorf("negative control: γ 0.2 and 0.8 clips %v and %v are not apart", got[0.2], got[0.8])
	}
	if _, err := NewAdaptiveClip(NewDPFedAvg(1, 0, 100, rng.New(1)), 0.01, 0, 0.5, 0, 5, 100, rng.New(2)); err == nil {
		t.Error("η_C = 0 accepted")
	}
	// The clip moves by the hand-computed geometric step: one round with
	// every norm below the clip and no count noise gives b̄ = 1, so
	// C₁ = C₀·exp(−η_C·(1 − γ)).
	a, _ := NewAdaptiveClip(NewDPFedAvg(1, 0, 4, rng.New(1)), 2, 0, 0.25, 0.5, 0, 4, rng.New(2))
	a.Aggregate(make([]float32, 1), 0, seqOf([][]float32{{1}, {0.5}, {-1}, {0}}))
	if want := 2 * math.Exp(-0.5*0.75); math.Abs(a.Clip()-want) > 1e-15 {
		t.Errorf("one step: clip %.17g, hand %.17g", a.Clip(), want)
	}
	// Half clipped, a non-finite delta counting zero: centered count
	// (1 − 1) = 0 over 4, b̄ = ½, C = 2·exp(−0.5·(½ − ¼)).
	a, _ = NewAdaptiveClip(NewDPFedAvg(1, 0, 4, rng.New(1)), 2, 0, 0.25, 0.5, 0, 4, rng.New(2))
	a.Aggregate(make([]float32, 1), 0, seqOf([][]float32{{1}, {5}, {float32(math.NaN())}}))
	if want := 2 * math.Exp(-0.5*0.25); math.Abs(a.Clip()-want) > 1e-15 {
		t.Errorf("with a dropped delta: clip %.17g, hand %.17g", a.Clip(), want)
	}
}

// TestAdaptiveClipNoiseScales: the update noise follows the clip norm
// (NoiseStd = NoiseScale·C_t), and State/SetState carry the clip across a
// resume bit for bit.
func TestAdaptiveClipNoiseScales(t *testing.T) {
	mk := func() *AdaptiveClip {
		a, err := NewAdaptiveClip(NewDPFedAvg(1, 0, 10, rng.New(1)), 0.5, 3, 0.5, 0.2, 0.5, 10, rng.New(2))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := mk()
	dst := make([]float32, 3)
	var clips []float64
	for r := 0; r < 6; r++ {
		rep, _ := a.Aggregate(dst, r, seqOf([][]float32{{1, 0, 0}, {0, 0.1, 0}}))
		if rep.NoiseStd != 3*rep.ClipNorm {
			t.Fatalf("round %d: noise std %v for clip %v, want 3×", r, rep.NoiseStd, rep.ClipNorm)
		}
		clips = append(clips, rep.ClipNorm)
	}
	b := mk()
	for r := 0; r < 3; r++ {
		b.Aggregate(dst, r, seqOf([][]float32{{1, 0, 0}, {0, 0.1, 0}}))
	}
	saved := b.State()
	for _, restore := range []bool{true, false} {
		c := mk()
		if restore {
			if err := c.SetState(saved); err != nil {
				t.Fatal(err)
			}
		}
		c.Seek(3)
		var rest []float64
		for r := 3; r < 6; r++ {
			rep, _ := c.Aggregate(dst, r, seqOf([][]float32{{1, 0, 0}, {0, 0.1, 0}}))
			rest = append(rest, rep.ClipNorm)
		}
		if slices.Equal(rest, clips[3:]) != restore {
			t.Fatalf("restore %v: clips %v, straight %v", restore, rest, clips[3:])
		}
	}
	if mk().SetState([]float64{-1}) == nil {
		t.Error("a negative clip norm restored")
	}
}
