package privacy

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

func pcgStreams(seed uint64) Streams {
	return func(i int) *rand.Rand { return rand.New(rand.NewPCG(seed, uint64(i))) }
}

// TestBallsInBinsCalibrate: 4 bins, 16 rounds, C banded Toeplitz (1, 0.5),
// ε = 1.5 at δ = 1e-3, 100,000 samples. The calibrated σ is the same bit
// for bit on 1 and 3 workers; re-accounted from independent streams with
// four times the samples its ε is at most the target plus 2% (the spread
// of independent estimates at this size is about ±1%; the calibration's
// margin of 2 standard errors keeps it below the target), and not below
// 80% of it (the margin is not a gross overshoot).
func TestBallsInBinsCalibrate(t *testing.T) {
	t.Parallel()
	m := BallsInBins{Bins: 4, Rounds: 16, Entry: toeplitzEntry([]float64{1, 0.5}), Bands: 2}
	target := BallsInBinsTarget{Epsilon: 1.5, Delta: 1e-3, MC: MonteCarlo{Samples: 100_000, Confidence: 0.99}, Margin: 2, Hint: 10, RelTol: 1e-3}
	ctx := context.Background()
	s1, err := BallsInBinsCalibrate(ctx, m, target, pcgStreams(1), 1)
	if err != nil {
		t.Fatal(err)
	}
	s3, err := BallsInBinsCalibrate(ctx, m, target, pcgStreams(1), 3)
	if err != nil || s1 != s3 {
		t.Fatalf("σ on 1 worker %v, on 3 workers %v (%v)", s1, s3, err)
	}
	m.NoiseMultiplier = s1
	g, err := BallsInBinsGuarantee(ctx, m, 1e-3, MonteCarlo{Samples: 400_000, Confidence: 0.99}, pcgStreams(2), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("σ = %.5f: independent %v", s1, g)
	if g.Epsilon > 1.5*1.02 || g.Epsilon < 1.5*0.8 || g.Method != MonteCarloMethod(0.99) || g.Adjacency != ZeroOut {
		t.Errorf("independent re-account %v, want within [0.8, 1.02] of 1.5", g)
	}
	g1, err := BallsInBinsGuarantee(ctx, m, 1e-3, MonteCarlo{Samples: 400_000, Confidence: 0.99}, pcgStreams(2), 1)
	if err != nil || g1 != g {
		t.Errorf("guarantee on 1 worker %v, on 2 %v (%v)", g1, g, err)
	}
}

// TestBallsInBinsCalibrateOneBin is the negative control: with one bin the
// pair is the Gaussian mechanism of sensitivity ‖C·1‖ (no amplification),
// whose exact calibration is known; the Monte Carlo calibration must not
// ask for less noise than it (it may ask for a little more: its bound and
// margin are conservative), and not much more (within 15%).
func TestBallsInBinsCalibrateOneBin(t *testing.T) {
	t.Parallel()
	m := BallsInBins{Bins: 1, Rounds: 8, Entry: toeplitzEntry([]float64{1}), Bands: 1}
	target := BallsInBinsTarget{Epsilon: 2, Delta: 1e-3, MC: MonteCarlo{Samples: 100_000, Confidence: 0.99}, Margin: 2, Hint: 1, RelTol: 1e-3}
	s, err := BallsInBinsCalibrate(context.Background(), m, target, pcgStreams(3), 2)
	if err != nil {
		t.Fatal(err)
	}
	exact, _, err := Calibrate(2, 1e-3, func(z float64) Event { return Gaussian{NoiseMultiplier: z / math.Sqrt(8)} }, func() Accountant { return NewExact() }, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one bin: Monte Carlo σ %.5f, exact %.5f", s, exact)
	if s < exact || s > 1.15*exact {
		t.Errorf("one bin: Monte Carlo σ %v, exact Gaussian σ %v", s, exact)
	}
}
