package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"dpfl/aggregators/strategy"
	"dpfl/privacy"
)

const committed = "../../../results/paper/bands/cells.csv"

// TestCommittedCellsRecompute recomputes the cheap cells (b̂ = 1 and 2, at
// two ε and two epoch counts) from the code and compares them with the
// committed cells.csv.
func TestCommittedCellsRecompute(t *testing.T) {
	cells, err := readCells(committed)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]cell{}
	for _, c := range cells {
		byKey[c.key()] = c
	}
	c := newComputer("", func(string) {})
	n := 0
	for _, eps := range []float64{0.125, 4} {
		for _, e := range []int{1, 64} {
			for _, bands := range []int{1, 2} {
				got, err := c.compute(context.Background(), eps, e, bands)
				if err != nil {
					t.Fatal(err)
				}
				want, ok := byKey[got.key()]
				if !ok {
					t.Fatalf("cell %s not in %s", got.key(), committed)
				}
				for _, p := range [][3]float64{{got.Z, want.Z, 1e-9}, {got.FrobB2, want.FrobB2, 1e-6}, {got.RMSE, want.RMSE, 1e-6}, {got.Q, want.Q, 0}} {
					if math.Abs(p[0]-p[1]) > p[2]*math.Abs(p[1]) {
						t.Errorf("cell %s: recomputed %v, committed %v", got.key(), p[0], p[1])
					}
				}
				n++
			}
		}
	}
	if n != 8 {
		t.Fatalf("%d cells compared", n)
	}
}

// TestDPSGDClosedForm: b̂ = 1 is DP-SGD: C = I, so ‖B‖²_F is ‖A‖²_F =
// n(n+1)/2 for the prefix sums and the sensitivity 1.
func TestDPSGDClosedForm(t *testing.T) {
	m, err := newComputer("", func(string) {}).bandMetrics(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(N*(N+1)) / 2; math.Abs(m.FrobB2-want) > 1e-9*want || math.Abs(m.SingleSensitivity-1) > 1e-12 {
		t.Fatalf("b̂ = 1: ‖B‖²_F = %v (want %v), sens %v", m.FrobB2, want, m.SingleSensitivity)
	}
}

// oracleEpsilon is an independent (ε, δ) bound for turns compositions of
// the Poisson-subsampled Gaussian: the RDP of integer orders α by the
// binomial expansion (Mironov, Talwar and Zhang 2019, "Rényi Differential
// Privacy of the Sampled Gaussian Mechanism", §3.3), converted with
// Canonne, Kamath and Steinke (2020) Prop 12, minimized over the integer
// orders given.
func oracleEpsilon(q, z float64, turns int, delta float64, orders []int) float64 {
	best := math.Inf(1)
	for _, a := range orders {
		// log Σ_k C(a,k) (1−q)^(a−k) q^k exp((k²−k)/(2z²)), in log space.
		terms := make([]float64, 0, a+1)
		mx := math.Inf(-1)
		for k := 0; k <= a; k++ {
			lc, _ := math.Lgamma(float64(a + 1))
			l1, _ := math.Lgamma(float64(k + 1))
			l2, _ := math.Lgamma(float64(a - k + 1))
			v := lc - l1 - l2 + float64(k*k-k)/(2*z*z)
			if k < a {
				v += float64(a-k) * math.Log1p(-q)
			}
			if k > 0 {
				v += float64(k) * math.Log(q)
			}
			terms = append(terms, v)
			mx = math.Max(mx, v)
		}
		s := 0.0
		for _, v := range terms {
			s += math.Exp(v - mx)
		}
		alpha := float64(a)
		rdp := float64(turns) * (mx + math.Log(s)) / (alpha - 1)
		eps := rdp + math.Log((alpha-1)/alpha) - (math.Log(delta)+math.Log(alpha))/(alpha-1)
		best = math.Min(best, eps)
	}
	return best
}

// gridOrders are the integer orders of privacy.DefaultOrders (2 to 10 are
// in its fractional grid too).
func gridOrders() []int {
	var o []int
	for a := 2; a <= 63; a++ {
		o = append(o, a)
	}
	return append(o, 128, 256, 512)
}

// fineIntOrders are the integer orders of FineOrders.
func fineIntOrders() []int {
	var o []int
	for _, a := range FineOrders() {
		if a == math.Trunc(a) && a >= 2 {
			o = append(o, int(a))
		}
	}
	return append([]int{2, 3, 4, 5, 6, 7, 8, 9, 10}, o...)
}

// TestAccountingAgainstOracle checks committed cells' calibration against
// oracleEpsilon over the accountant's integer orders (cells.csv: the
// default grid; cells-fine.csv: FineOrders): at the committed z the
// oracle's ε is at least the ε achieved (the accountant's fractional orders
// can only do better) and, for ε ≤ 1 (whose best order is an integer above
// 10), equal to it within 1e-6; the negative control: at 0.9 z the oracle's
// ε exceeds the target.
func TestAccountingAgainstOracle(t *testing.T) {
	for _, f := range []struct {
		path   string
		orders []int
	}{{committed, gridOrders()}, {filepath.Join(filepath.Dir(committed), "cells-fine.csv"), fineIntOrders()}} {
		cells, err := readCells(f.path)
		if err != nil {
			t.Fatal(err)
		}
		checkOracle(t, f.path, cells, f.orders)
	}
}

func checkOracle(t *testing.T, path string, cells []cell, orders []int) {
	checked := 0
	for _, c := range cells {
		if c.Q >= 1 || !(c.Epochs == 1 && (c.Bands == 1 || c.Bands == 8) || c.Epochs == 16 && c.Bands == 2) {
			continue
		}
		o := oracleEpsilon(c.Q, c.Z, c.Turns, Delta, orders)
		if o < c.Achieved*(1-1e-9) || c.Epsilon <= 1 && o > c.Achieved*(1+1e-6) {
			t.Errorf("%s, cell %s: oracle ε %v at z = %v, achieved %v", path, c.key(), o, c.Z, c.Achieved)
		}
		if c.Achieved > c.Epsilon*(1+1e-9) {
			t.Errorf("%s, cell %s: achieved ε %v above the target", path, c.key(), c.Achieved)
		}
		if lo := oracleEpsilon(c.Q, 0.9*c.Z, c.Turns, Delta, orders); lo <= c.Epsilon {
			t.Errorf("%s, cell %s: oracle ε %v at 0.9 z not above the target: the check cannot fail", path, c.key(), lo)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("%s: only %d cells checked", path, checked)
	}
	t.Logf("%s: %d cells checked", path, checked)
}

// TestRenderResumes: render marks cells not computed, and fill skips the
// committed cells (a resumed run with nothing to do writes nothing).
func TestRenderResumes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cells.csv")
	c := newComputer("", func(string) {})
	if err := c.fill(context.Background(), path, limits{1, N}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := c.fill(context.Background(), path, limits{1, N}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatal("a resumed run rewrote finished cells")
	}
	cells, err := readCells(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != len(Epsilons)*len(Epochs) {
		t.Fatalf("%d cells for b̂ = 1, want %d", len(cells), len(Epsilons)*len(Epochs))
	}
	if b := optimum(cells, 1, 1024); !b.ok || b.bands != 1 {
		t.Fatalf("E = n: optimum %+v, want b̂ = 1 (the only one)", b)
	}
	if b := optimum(cells, 1, 1); b.ok {
		t.Fatalf("E = 1 with only b̂ = 1 computed reported complete: %+v", b)
	}
}

// TestSamplingPaperExample: the paper's App F.5 example (CIFAR-10: n = 2000
// steps, 20 epochs, batch 500 of 50,000): b̂ = 2 gives two partitions of
// 25,000, sampling probability 500/25,000 = 0.02 and 1000 events composed;
// b̂ = 100 gives probability 1 (no amplification), 20 events.
func TestSamplingPaperExample(t *testing.T) {
	for _, c := range []struct {
		bands, turns int
		q            float64
	}{{2, 1000, 500.0 / 25000}, {100, 20, 1}, {1, 2000, 500.0 / 50000}} {
		q, turns := sampling(2000, 20, c.bands)
		if math.Abs(q-c.q) > 1e-15 || turns != c.turns {
			t.Errorf("b̂ = %d: q = %v, %d turns; want %v, %d", c.bands, q, turns, c.q, c.turns)
		}
	}
}

// TestPLDCells: the committed PLD cells need no more noise than the RDP
// ones of the same cell (both are upper bounds on ε; the PLD is the
// tighter), and where q = 1 (no amplification: turns Gaussians composed,
// one Gaussian of noise multiplier z/sqrt(turns)) the PLD's z is the exact
// Gaussian calibration's within 1e-3.
func TestPLDCells(t *testing.T) {
	pld, err := readCells(filepath.Join(filepath.Dir(committed), "cells-pld.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rdp, err := readCells(committed)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]cell{}
	for _, c := range rdp {
		byKey[c.key()] = c
	}
	exact, err := privacy.NewByName("exact", nil)
	if err != nil {
		t.Fatal(err)
	}
	compared, unamplified := 0, 0
	for _, c := range pld {
		if r, ok := byKey[c.key()]; ok {
			compared++
			if c.Z > r.Z*(1+1e-6) {
				t.Errorf("cell %s: PLD z %v above RDP z %v", c.key(), c.Z, r.Z)
			}
		}
		if c.Q != 1 {
			continue
		}
		unamplified++
		z, _, err := privacy.CalibrateContext(context.Background(), c.Epsilon, Delta, func(z float64) privacy.Event {
			return privacy.Neighbouring{Relation: privacy.ZeroOut, Event: privacy.Gaussian{NoiseMultiplier: z}}
		}, exact, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		if z *= math.Sqrt(float64(c.Turns)); math.Abs(c.Z-z) > 1e-3*z {
			t.Errorf("cell %s: PLD z %v, exact Gaussian %v", c.key(), c.Z, z)
		}
	}
	if compared < 100 || unamplified < 10 {
		t.Fatalf("%d cells compared, %d unamplified", compared, unamplified)
	}
}

// TestFullBandsIsOptimal: with b̂ = n bands the banded problem has no band
// constraint left: it is the optimal single-participation factorization
// (min tr(AᵀA X⁻¹) over unit-diagonal X, convex), which the fixed point of
// Denisov et al. (2022) solves with a certified duality gap. The committed
// b̂ = 1024 cells, optimized by L-BFGS on the banded parametrization, must
// lie between the fixed point's dual bound and its primal value (relative
// slack 1e-7 for the L-BFGS stopping tolerance). Control: the committed
// b̂ = 512 cells lie above that interval by more than 1%, so the interval
// separates a wrong strategy.
func TestFullBandsIsOptimal(t *testing.T) {
	cells, err := readCells(committed)
	if err != nil {
		t.Fatal(err)
	}
	var primal, dual float64
	_, err = strategy.OptimalSingle(context.Background(), strategy.Prefix(N), strategy.FixedPointOptions{
		Gap:      1e-9,
		Progress: func(_ int, p, d float64) { primal, dual = p, d },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !(dual > 0 && primal >= dual && (primal-dual)/primal < 1e-6) {
		t.Fatalf("fixed point: primal %v, dual %v", primal, dual)
	}
	t.Logf("fixed point: primal %.7f, dual bound %.7f", primal, dual)
	full, half := 0, 0
	for _, c := range cells {
		switch c.Bands {
		case N:
			full++
			if c.FrobB2 < dual*(1-1e-7) || c.FrobB2 > primal*(1+1e-7) {
				t.Errorf("cell %s: ‖B‖²_F = %.6f outside the fixed point's [%.6f, %.6f]", c.key(), c.FrobB2, dual, primal)
			}
		case N / 2:
			half++
			if c.FrobB2 < primal*1.01 {
				t.Errorf("control: cell %s (%d bands) has ‖B‖²_F = %.6f, within 1%% of the optimum %.6f", c.key(), c.Bands, c.FrobB2, primal)
			}
		}
	}
	if full == 0 || half == 0 {
		t.Fatalf("%s has %d cells of b̂ = %d and %d of b̂ = %d", committed, full, N, half, N/2)
	}
}
