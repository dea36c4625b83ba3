package strategy

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"dpfl/participation"
)

// TestToeplitzSensitivityAgainstBruteForce: for nonnegative non-increasing
// Toeplitz coefficients (random, ν-DP-FTRL, truncated ν-DP-FTRL) the
// sensitivity under single, (k,b) and b-min-sep equals the maximum over every
// participation pattern (X ≥ 0, so the brute force is exact) to 1e-12
// relative, for n ≤ 12 and every k, b ≤ 5; signed coefficients are exact
// (brute force, whose sign search is exact for diagonal pattern blocks)
// under single participation and with at most b bands, and refused
// otherwise.
func TestToeplitzSensitivityAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	const tol = 1e-12
	var coefs [][]float64
	for trial := 0; trial < 12; trial++ {
		c := make([]float64, 1+rng.IntN(12))
		for i := range c {
			c[i] = rng.Float64()
		}
		sort.Sort(sort.Reverse(sort.Float64Slice(c)))
		coefs = append(coefs, c)
	}
	for _, nu := range []float64{0, 0.05, 0.3} {
		c, _ := NewNuBanded(12, nu, 12).Coefficients()
		coefs = append(coefs, c)
		c, _ = NewNuBanded(12, nu, 4).Coefficients()
		coefs = append(coefs, c)
	}
	for _, c := range coefs {
		for n := 1; n <= 12; n++ {
			x := gramOf(toeplitzLower(n, append(c, make([]float64, n)...)[:n]))
			for k := 1; k <= 5; k++ {
				for b := 1; b <= 5; b++ {
					for _, p := range []participation.Pattern{participation.AtMostOnce, participation.Turns(k, b), participation.Spaced(k, b)} {
						got, ok := ToeplitzSensitivity(c, n, p)
						if !ok || !got.Exact {
							t.Fatalf("c=%v: not exact", c)
						}
						want := math.Sqrt(bruteSens2(x, p))
						if !near(got.Value, want, tol*want) {
							t.Fatalf("c=%v n=%d %v: %v, brute force %v", c, n, p, got.Value, want)
						}
					}
				}
			}
		}
	}
	for _, c := range [][]float64{{1, 0.5, 0.8}, {1, -0.2}, {1, math.NaN()}} {
		if _, ok := ToeplitzSensitivity(c, 6, participation.Spaced(2, 1)); ok {
			t.Errorf("%v accepted as nonnegative non-increasing or banded", c)
		}
	}
	// Signed coefficients: exact under single participation, and with at
	// most b bands under (k,b) and b-min-sep (disjoint column supports).
	for trial := 0; trial < 40; trial++ {
		c := make([]float64, 1+rng.IntN(5))
		for i := range c {
			c[i] = rng.NormFloat64()
		}
		n := 1 + rng.IntN(12)
		x := gramOf(toeplitzLower(n, append(c, make([]float64, n)...)[:n]))
		for k := 1; k <= 4; k++ {
			for b := 1; b <= 6; b++ {
				for _, p := range []participation.Pattern{participation.AtMostOnce, participation.Turns(k, b), participation.Spaced(k, b)} {
					got, ok := ToeplitzSensitivity(c, n, p)
					kk := 1
					if !p.Once() {
						kk = min(k, ceilDiv(n, b))
					}
					if want := kk == 1 || len(c) <= b || toeplitzMonotone(c); ok != want {
						t.Fatalf("c=%v n=%d %v: exact %v, want %v", c, n, p, ok, want)
					}
					if !ok {
						continue
					}
					if want := math.Sqrt(bruteSens2(x, p)); !near(got.Value, want, 1e-12*want) {
						t.Fatalf("signed c=%v n=%d %v: %v (%s), brute force %v", c, n, p, got.Value, got.Method, want)
					}
				}
			}
		}
	}
}

// TestNuMinSepExact is the jax_privacy case (toeplitz_test
// test_sensitivity_squared_min_sep_one: n = 50, c_t = sqrt(1 − 0.999·t/49),
// min_sep 1, 5 participations): Choquette-Choo et al. 2023 Thm 3 bounds sens² by 607.385 (what
// SensitivityOf printed before), the exact value is 603.893 =
// ‖C(e_0+…+e_4)‖² (jax_privacy's own oracle), now from the coefficients
// (ToeplitzSensitivity) and from X alone (monotoneGram).
// ν-DP-FTRL under b-min-sep is now exact and below the bound, e.g. n = 60,
// ν tuned, 4 participations 10 apart (the emnist-writers runs): 3.74007
// (the Thm 3 bound was 3.77375).
func TestNuMinSepExact(t *testing.T) {
	const n = 50
	c := make([]float64, n)
	for i := range c {
		c[i] = math.Sqrt(1 + (0.001-1)*float64(i)/float64(n-1))
	}
	p := participation.Spaced(5, 1)
	x := gramOf(toeplitzLower(n, c))
	bound := thm3Bound(x, patternOf(p))
	exact, ok := ToeplitzSensitivity(c, n, p)
	gram, err := SensitivityOf(x, p) // through monotoneGram, from X alone
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("jax_privacy case: Thm 3 bound sens² %.4f, exact %.4f (%s; from X: %.4f, %s)", bound, exact.Value*exact.Value, exact.Method, gram.Value*gram.Value, gram.Method)
	if !ok || !near(bound, 607.3852, 1e-4) || !near(exact.Value*exact.Value, 603.8934, 1e-4) || !gram.Exact || !near(gram.Value, exact.Value, 1e-12*exact.Value) {
		t.Errorf("bound %v exact %v (%v), from X %v (%s)", bound, exact.Value*exact.Value, ok, gram.Value*gram.Value, gram.Method)
	}
	// jax_privacy's oracle: ‖Σ of the first k columns‖².
	want := 0.0
	for i := 0; i < n; i++ {
		v := 0.0
		for j := 0; j < 5 && j <= i; j++ {
			v += c[i-j]
		}
		want += v * v
	}
	if !near(exact.Value*exact.Value, want, 1e-12*want) {
		t.Errorf("exact %v, first-columns oracle %v", exact.Value*exact.Value, want)
	}

	nu := NewNu(60, TuneNu(60, 0.0005))
	got, err := nu.Sensitivity(participation.Spaced(4, 10))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exact || !near(got.Value, 3.74007, 1e-5) {
		t.Errorf("nu n=60 minsep(4,10): %v (%s)", got.Value, got.Method)
	}
}
