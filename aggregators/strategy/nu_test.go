package strategy

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// TestNuBanded: truncating ν-DP-FTRL's C to b coefficients gives a b-banded
// Toeplitz C whose stored inverse coefficients invert it (C·C⁻¹ = I to
// 1e-12); its loss equals sens²·‖A C⁻¹‖²_F with C⁻¹ from gonum's general
// inverse (1e-9 relative); its sensitivity is exact and equals the brute
// force over all patterns (small n); b ≥ n is the untruncated strategy.
// At n = 256 (ν tuned, 0.003) the trade-off is: fewer bands, lower
// sensitivity, higher loss, monotonically (values pinned to 1e-4 from this
// implementation as a regression check: 8 bands 6206.87, 16: 3852.96, 32:
// 2625.78, 64: 2038.05, 128: 1806.41, all 256: 1764.79).
func TestNuBanded(t *testing.T) {
	const n, nu = 40, 0.05
	full := NewNu(n, nu)
	if s := NewNuBanded(n, nu, n+5); s.Bands() != n || s.String() != "nu" {
		t.Fatal("bands ≥ n is not the plain strategy")
	}
	for _, b := range []int{1, 3, 8, 39} {
		s := NewNuBanded(n, nu, b)
		if s.String() == full.String() || s.Bands() != b {
			t.Fatalf("name %q bands %d", s.String(), s.Bands())
		}
		c, ci := s.Coefficients()
		var prod mat.Dense
		prod.Mul(toeplitzLower(n, c), toeplitzLower(n, ci))
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				want := 0.0
				if i == j {
					want = 1
				}
				if math.Abs(prod.At(i, j)-want) > 1e-12 {
					t.Fatalf("bands %d: (C C⁻¹)[%d,%d] = %g", b, i, j, prod.At(i, j))
				}
			}
		}
		if bw := Bandwidth(s.Gram(), 1e-15); bw != b {
			t.Fatalf("bands %d: Gram bandwidth %d", b, bw)
		}
		wl := Momentum(n, 0.9, nil)
		m, err := Evaluate(s, wl, participation.AtMostOnce)
		if err != nil {
			t.Fatal(err)
		}
		var inv, bm mat.Dense
		if err := inv.Inverse(s.Encoder()); err != nil {
			t.Fatal(err)
		}
		bm.Mul(wl.A(), &inv)
		want := m.Sensitivity.Value * m.Sensitivity.Value * math.Pow(mat.Norm(&bm, 2), 2)
		if math.Abs(m.Loss-want) > 1e-9*want {
			t.Fatalf("bands %d: loss %v, independent %v", b, m.Loss, want)
		}
	}
	small := NewNuBanded(12, 0.1, 3)
	for _, p := range []participation.Pattern{participation.Spaced(3, 3), participation.Spaced(2, 5), participation.Turns(3, 4), participation.AtMostOnce} {
		got, err := small.Sensitivity(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteSens2(small.Gram(), p); math.Abs(got.Value*got.Value-want) > 1e-12 || !got.Exact {
			t.Fatalf("%v: sens² %v (%s), brute force %v", p, got.Value*got.Value, got.Method, want)
		}
	}
	pinned := map[int]float64{8: 6206.87, 16: 3852.96, 32: 2625.78, 64: 2038.05, 128: 1806.41, 256: 1764.79}
	prevSens, prevLoss := 0.0, math.Inf(1)
	for _, b := range []int{8, 16, 32, 64, 128, 256} {
		m, err := Evaluate(NewNuBanded(256, 0.003, b), Prefix(256), participation.AtMostOnce)
		if err != nil {
			t.Fatal(err)
		}
		if !(m.Sensitivity.Value > prevSens && m.Loss < prevLoss) || math.Abs(m.Loss-pinned[b]) > 1e-4*pinned[b] {
			t.Fatalf("n = 256, %d bands: sensitivity %v (previous %v), loss %v (previous %v, pinned %v)", b, m.Sensitivity.Value, prevSens, m.Loss, prevLoss, pinned[b])
		}
		prevSens, prevLoss = m.Sensitivity.Value, m.Loss
	}
}
