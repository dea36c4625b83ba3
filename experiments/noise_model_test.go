package experiments

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"dpfl/aggregators"
	"dpfl/results"
)

// TestRunNoiseReachesModel checks that a run's noise reaches the model with
// its strategy's correlations, end to end: with client updates of order
// 1e-9 (client lr), server lr 1 and no momentum, the final model minus its
// noise-free twin's (same seed, noise_multiplier 0) is −(noise_std /
// denominator) · Σ_t (W z)_t, W the strategy's noise weights (C⁻¹) and z
// standard normal in d = 7,850 dimensions (logreg on MNIST). So
// ‖Δ‖² / (d · (noise_std/denominator)² · ‖Σ_t W_t‖²) is χ²_d / d: within
// 6·√(2/d) of 1. Checked for amplified BandMF (kb-poisson, 4 bands),
// Multi-epoch MF ((k,b)) and DP-FedAvg (W = I, ‖Σ_t W_t‖² = rounds).
// Negative control: BandMF's and Multi-epoch MF's Δ against independent
// noise's prediction (rounds instead of ‖Σ_t W_t‖²) are far outside.
func TestRunNoiseReachesModel(t *testing.T) {
	const rounds, d = 64, 7850
	ctx := context.Background()
	run := func(agg, part string, noise float64) (*Plan, []float32) {
		t.Helper()
		// The package's small logreg run (aggRun), with the noise given
		// rather than calibrated and client steps of 1e-9.
		y := aggRun(rounds, part, fmt.Sprintf("%s  noise_multiplier: %g\n", agg, noise))
		y = strings.Replace(strings.Replace(y, "  epsilon: 4\n", "", 1), "client:\n  lr: 0.1\n", "client:\n  lr: 1.0e-9\n", 1)
		cfg, _, err := Load([]byte(y), "noise.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(ctx, cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := Run(ctx, cfg, Options{OutDir: t.TempDir(), Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		ts, _, err := results.ReadSafetensors(filepath.Join(out.Dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		var theta []float32
		for _, x := range ts {
			theta = append(theta, x.Data...)
		}
		if len(theta) != d {
			t.Fatalf("%d parameters, want %d", len(theta), d)
		}
		return p, theta
	}
	for _, c := range []struct{ name, agg, part string }{
		{"amplified BandMF", "  kind: bandmf\n  bands: 4\n", "  kind: kb-poisson\n  b: 4\n  q: 0.1\n"},
		{"Multi-epoch MF", "  kind: optimal-mf\n  multi_epoch: true\n", "  kind: kb\n  cohort: 50\n  k: 16\n  b: 4\n"},
		{"DP-FedAvg", "  kind: dpfedavg\n", "  kind: poisson\n  q: 0.025\n"},
	} {
		p, noisy := run(c.agg, c.part, 1.5)
		_, clean := run(c.agg, c.part, 0)
		var dd float64
		for i := range noisy {
			x := float64(noisy[i]) - float64(clean[i])
			dd += x * x
		}
		w, err := aggregators.NoiseWeights(p.Mechanism.Strategy)
		if err != nil {
			t.Fatal(err)
		}
		_, latents := w.Dims()
		var rowSq float64 // ‖Σ_t W_t‖²
		for j := 0; j < latents; j++ {
			s := 0.0
			for i := 0; i < rounds; i++ {
				s += w.At(i, j)
			}
			rowSq += s * s
		}
		unit := float64(d) * math.Pow(p.Privacy.NoiseStd/p.Privacy.Denominator, 2)
		ratio, indep := dd/(unit*rowSq), dd/(unit*rounds)
		tol := 6 * math.Sqrt(2.0/d)
		t.Logf("%s: ‖Δ‖² / prediction = %.4f (±%.3f); against independent noise %.4f (‖Σ W_t‖² = %.3f, rounds %d)", c.name, ratio, tol, indep, rowSq, rounds)
		if math.Abs(ratio-1) > tol {
			t.Errorf("%s: the model moved by %.4f times its strategy's noise variance", c.name, ratio)
		}
		if !strings.HasPrefix(c.name, "DP-FedAvg") && math.Abs(indep-1) <= tol {
			t.Errorf("%s: control: independent noise's prediction fits too (%.4f)", c.name, indep)
		}
	}
}
