package aggregators

import (
	"math"
	"math/rand/v2"
	"testing"

	"dpfl/privacy"
	"dpfl/sim/rng"
)

// TestAGDLedgerNeverOverspends is a property test over 300 random DP-AGD
// runs (random budget shares, growth, candidate counts, and random losses,
// so "no step" wins often and the gradient budget grows): the ledger never
// holds more than its total (to its 1e-12 rounding slack), every release
// is recorded at its stated cost (gradient ρ_ng, noisy max ρ_nmax,
// re-measurement (1+γ)ρ_ng − ρ_ng), and a run ends only when the next
// round no longer fits.
func TestAGDLedgerNeverOverspends(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for run := 0; run < 300; run++ {
		total := 0.01 + r.Float64()
		ledger, err := privacy.NewLedger(total)
		if err != nil {
			t.Fatal(err)
		}
		a := &AGD{Clip: 1, LossClip: 2, RhoNG: total * (0.01 + 0.3*r.Float64()), RhoMax: total * (0.005 + 0.2*r.Float64()),
			Growth: 0.05 + 2*r.Float64(), Steps: 1 + r.IntN(6), MaxStep: 1, StepEvery: 1 + r.IntN(5), Ledger: ledger, Root: rng.New(uint64(run))}
		if err := a.Validate(); err != nil {
			t.Fatal(err)
		}
		const d = 3
		rounds := 0
		for ; a.Affordable() && rounds < 10000; rounds++ {
			deltas := [][]float32{{r.Float32(), -r.Float32(), 1}, {2, 0, 0}}
			rho := a.RhoNG
			if _, err := a.Gradient(rounds, seqOf(deltas), d); err != nil {
				t.Fatal(err)
			}
			want := []float64{rho}
			for {
				losses := make([]float64, a.Steps+1)
				for j := range losses {
					losses[j] = 100 * r.Float64() // step and no step in random order
				}
				j, err := a.Choose(rounds, losses)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, a.RhoMax)
				if j > 0 {
					break
				}
				before := a.RhoNG
				ok, err := a.Remeasure(rounds)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if ledger.CanSpend(a.Growth*before + a.RhoMax) {
						t.Fatalf("run %d: re-measurement refused with %.6g left", run, ledger.Remaining())
					}
					break
				}
				want = append(want, a.RhoNG-before)
			}
			if ledger.Spent() > total*(1+1e-12) {
				t.Fatalf("run %d round %d: spent %.17g of %.17g", run, rounds, ledger.Spent(), total)
			}
			var got []float64
			for _, e := range ledger.Expenses() {
				if e.Round == rounds {
					got = append(got, e.Rho)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("run %d round %d: expenses %v, want %v", run, rounds, got, want)
			}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-15*total {
					t.Fatalf("run %d round %d: expense %d is %v, want %v", run, rounds, i, got[i], want[i])
				}
			}
		}
		if a.Affordable() || rounds == 0 && total*(1+1e-12) >= a.RhoNG+a.RhoMax {
			t.Fatalf("run %d stopped after %d rounds with %.6g left for a round of %.6g", run, rounds, ledger.Remaining(), a.RhoNG+a.RhoMax)
		}
		if _, err := a.Gradient(rounds, seqOf(nil), d); err == nil {
			t.Fatalf("run %d: a gradient beyond the budget was released", run)
		}
	}
}

// TestNoisyMax: at a high budget (Laplace scale 1e-6 against loss gaps of
// 0.1) the noisy max always returns the smallest loss; at a tiny budget
// (scale 1e6) its choices among 6 candidates are uniform by a χ² test
// (6000 draws, 5 degrees of freedom, χ² < 20.5: p = 0.001); negative
// control: the high-budget choices fail that test.
func TestNoisyMax(t *testing.T) {
	losses := []float64{0.5, 0.3, 0.2, 0.6, 0.4, 0.7}
	r := rng.New(9).Stream("noisymax")
	chi2 := func(scale float64) (float64, []int) {
		counts := make([]int, len(losses))
		const n = 6000
		for i := 0; i < n; i++ {
			counts[NoisyMax(losses, scale, r)]++
		}
		e := float64(n) / float64(len(losses))
		var x float64
		for _, c := range counts {
			x += (float64(c) - e) * (float64(c) - e) / e
		}
		return x, counts
	}
	if x, counts := chi2(1e-6); counts[2] != 6000 || x < 20.5 {
		t.Fatalf("high budget: choices %v (χ² %v), want all on candidate 2", counts, x)
	}
	if x, counts := chi2(1e6); x > 20.5 {
		t.Fatalf("tiny budget: choices %v, χ² %v > 20.5: not uniform", counts, x)
	}
}
