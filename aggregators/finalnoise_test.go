package aggregators

import (
	"context"
	"math"
	"os"
	"testing"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
)

// finalModelNoise is the per-coordinate std of the noise in the final model
// of SGD with heavy-ball momentum beta and learning rates eta, per unit of
// noise std, when round t adds noise (W z)_t (W = NoiseWeights): the norm
// of eᵀW with e_k = Σ_{i≥k} η_i β^{i−k}, the last row of the workload
// S·diag(η)·M_β.
func finalModelNoise(w interface{ At(i, j int) float64 }, n int, beta float64, eta []float64) float64 {
	e := make([]float64, n)
	for k := n - 1; k >= 0; k-- { // e_k = η_k + β e_{k+1}
		e[k] = eta[k]
		if k+1 < n {
			e[k] += beta * e[k+1]
		}
	}
	ss := 0.0
	for j := 0; j < n; j++ {
		v := 0.0
		for k := j; k < n; k++ {
			v += e[k] * w.At(k, j)
		}
		ss += v * v
	}
	return math.Sqrt(ss)
}

// curvedFinalNoise is finalModelNoise on a quadratic loss of curvature h
// (the gradient is h·x plus the noise): the update is v ← βv + h·x + noise,
// x ← x − lr·sched_t·v, so noise injected early is pulled back by the later
// steps. The weights e_k of the final x on round k's noise follow from the
// adjoint of that linear recursion; h = 0 gives finalModelNoise's e_k
// (times lr).
func curvedFinalNoise(w interface{ At(i, j int) float64 }, n int, beta, lr, h float64, sched []float64) float64 {
	e := make([]float64, n)
	lx, lv := 1.0, 0.0 // the final x's adjoint in (x, v)
	for t := n - 1; t >= 0; t-- {
		eta := lr * sched[t]
		// x' = (1 − ηh)x − ηβv − η·noise, v' = h·x + βv + noise
		e[t] = lv - eta*lx
		lx, lv = lx*(1-eta*h)+lv*h, beta*(lv-eta*lx)
	}
	return finalModelNoise(w, n, 0, e)
}

// TestFinalModelNoise computes, for results/paper/centralized-mnist-bandmf
// (2,400 rounds, linear cooldown over the last 600 to 0.05), the noise each
// strategy leaves in the final model at the noise std its runs add at ε = 1
// and 2 (from their summary.json: amplified BandMF with 4 and 8 bands,
// σ = 3.4544 and 2.6787 per participation; Multi-epoch MF, (k,b) = (20,
// 120), noise std 16.684 and 8.9166), with momentum 0.95 as the runs train
// and without. Both strategies are optimized for prefix sums, where
// BandMF's RMSE is the lower (by 5% and 11%, the folder's README); in the
// final model Multi-epoch MF's noise is the lower, by 5–10% in all four
// cases, which the test asserts. The closed form e_k above is checked
// against the workload matrix strategy.Momentum builds (its last row).
// With a curvature h in the loss (curvedFinalNoise), Multi-epoch MF's lead
// shrinks and reverses as h grows (ε = 1, no momentum, lr 1: from 0.94 of
// BandMF's at h = 0 to about 1.2 at h = 0.01), so a loss that pulls the
// model back does not explain Multi-epoch MF's higher final accuracy.
// Long (Multi-epoch MF's strategy takes a minute or two): DPFL_LONG=1.
func TestFinalModelNoise(t *testing.T) {
	if os.Getenv("DPFL_LONG") != "1" {
		t.Skip("long: set DPFL_LONG=1 to run it")
	}
	const n = 2400
	eta := strategy.LinearCooldown(n, 600, 0.05)
	for _, beta := range []float64{0.95, 0} {
		a := strategy.Momentum(n, beta, eta).A()
		e := make([]float64, n)
		for k := n - 1; k >= 0; k-- {
			e[k] = eta[k]
			if k+1 < n {
				e[k] += beta * e[k+1]
			}
		}
		for k := range e {
			if math.Abs(e[k]-a.At(n-1, k)) > 1e-9*math.Abs(a.At(n-1, k)) {
				t.Fatalf("β = %g: e_%d = %g, the workload's last row has %g", beta, k, e[k], a.At(n-1, k))
			}
		}
	}
	ctx := context.Background()
	weights := func(name string, bands int, p participation.Pattern) interface{ At(i, j int) float64 } {
		s, err := strategy.Build(ctx, name, strategy.Config{Workload: strategy.Prefix(n), Participation: p, Bands: bands})
		if err != nil {
			t.Fatal(err)
		}
		w, err := NoiseWeights(s)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	me := weights("multi-epoch", 0, participation.Turns(20, 120))
	for _, c := range []struct {
		eps, bandStd, meStd float64
		bands               int
	}{{1, 3.454384206970649, 16.683891992972324, 4}, {2, 2.6787407291776524, 8.916603040059755, 8}} {
		bw := weights("bandmf", c.bands, participation.Turns(n/c.bands, c.bands))
		for _, beta := range []float64{0.95, 0} {
			b := c.bandStd * finalModelNoise(bw, n, beta, eta)
			m := c.meStd * finalModelNoise(me, n, beta, eta)
			t.Logf("ε = %g, momentum %g: final-model noise std (clip norms of the sum, per unit of server lr): BandMF (%d bands) %.1f, Multi-epoch MF %.1f (%.1f%% lower)", c.eps, beta, c.bands, b, m, 100*(1-m/b))
			if r := m / b; r < 0.90 || r > 0.95 {
				t.Errorf("ε = %g, momentum %g: Multi-epoch MF's final-model noise is %.3f of BandMF's, want 0.90–0.95", c.eps, beta, r)
			}
			if d := curvedFinalNoise(bw, n, beta, 1, 0, eta) / finalModelNoise(bw, n, beta, eta); math.Abs(d-1) > 1e-9 {
				t.Errorf("ε = %g, momentum %g: with h = 0 the curved recursion gives %.12g times the closed form", c.eps, beta, d)
			}
		}
		if c.eps != 1 {
			continue
		}
		// A loss that pulls the model back (curvature h, no momentum, the
		// learning rate 1 both strategies chose at ε = 1 in the ablation
		// without momentum) does not favour Multi-epoch MF more: its lead
		// in the final model's noise shrinks and then reverses as h grows.
		prev := 0.0
		for _, h := range []float64{0, 1e-4, 1e-3, 1e-2} {
			b := c.bandStd * curvedFinalNoise(bw, n, 0, 1, h, eta)
			m := c.meStd * curvedFinalNoise(me, n, 0, 1, h, eta)
			t.Logf("ε = 1, no momentum, lr 1, curvature h = %g: BandMF %.2f, Multi-epoch MF %.2f (ratio %.3f)", h, b, m, m/b)
			if m/b <= prev {
				t.Errorf("h = %g: ratio %.3f, not above %.3f at the smaller h", h, m/b, prev)
			}
			prev = m / b
		}
		if prev <= 1 {
			t.Errorf("h = 0.01: Multi-epoch MF's final-model noise is %.3f of BandMF's, want above 1", prev)
		}
	}
}
