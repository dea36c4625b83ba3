package strategy

import (
	"context"
	"fmt"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

func TestOptimalSingleReference(t *testing.T) {
	// Optimal losses computed by an independent implementation (float64, gap
	// 1e-9) and recorded here.
	ref := map[int]float64{4: 6.874144, 16: 45.665357, 64: 282.201421, 256: 1631.403045}
	for _, n := range []int{4, 16, 64, 256} {
		f, err := OptimalSingle(context.Background(), Prefix(n), FixedPointOptions{Gap: 1e-9})
		if err != nil {
			t.Fatal(err)
		}
		st := f.Status()
		if !st.Converged || st.Gap > 1e-9 {
			t.Fatalf("n=%d: not converged: %+v", n, st)
		}
		m := mustEval(t, f, Prefix(n), participation.AtMostOnce)
		// Reference printed to 6 decimals; our gap 1e-9 bounds the suboptimality
		// by 1e-9·loss, so tolerance 1e-6 + 2e-9·loss.
		if !near(m.Loss, ref[n], 1e-6+2e-9*ref[n]) {
			t.Errorf("n=%d: loss %.7f, want %.6f", n, m.Loss, ref[n])
		}
		if !near(m.Sensitivity.Value, 1, 1e-12) {
			t.Errorf("n=%d: sensitivity %v, want 1", n, m.Sensitivity.Value)
		}
		// Primal equals dual at convergence: the dual bound reached is within the gap.
		t.Logf("n=%d: %d iterations, gap %.2e, %s", n, st.Iterations, st.Gap, st.Message)
		c, _ := f.Factor()
		if !mat.EqualApprox(gramOf(c), f.Gram(), 1e-10) {
			t.Errorf("n=%d: CᵀC ≠ X", n)
		}
		if n == 4 {
			// C₀₀ = 0.8247, C₁₀ = 0.4495 (4 decimals).
			if !near(c.At(0, 0), 0.8247, 1e-4) || !near(c.At(1, 0), 0.4495, 1e-4) {
				t.Errorf("n=4: C00 %v C10 %v, want 0.8247 0.4495", c.At(0, 0), c.At(1, 0))
			}
		}
		if n == 64 && (!near(c.At(0, 0), 0.5397, 1e-4) || !near(c.At(1, 0), 0.3209, 1e-4)) {
			t.Errorf("n=64: C00 %v C10 %v, want 0.5397 0.3209", c.At(0, 0), c.At(1, 0))
		}
	}
}

// The dual bound at the optimum equals the primal: run to gap 1e-12 and
// compare the optimal loss with the dual bound of a fresh, unconverged
// iterate, which must lie below it (weak duality).
func TestOptimalDualityAndOrdering(t *testing.T) {
	n := 64
	w := Prefix(n)
	var duals []float64
	f, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-12, Progress: func(_ int, p, d float64) {
		duals = append(duals, d)
		if d > p*(1+1e-12) {
			t.Errorf("dual %v above primal %v", d, p)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	opt := mustEval(t, f, w, participation.AtMostOnce).Loss
	for i, d := range duals {
		if d > opt*(1+1e-12) {
			t.Errorf("iteration %d: dual bound %v above optimum %v", i, d, opt)
		}
	}
	if last := duals[len(duals)-1]; !near(last, opt, 1e-11*opt) {
		t.Errorf("dual %v ≠ primal %v at convergence (tolerance 1e-11 relative)", last, opt)
	}
	// The ordering every correct implementation gives: optimal < sqrt < Honaker full < online < vanilla < identity.
	single := participation.AtMostOnce
	order := []float64{
		opt,
		mustEval(t, NewNu(n, 0), w, single).Loss,
		mustEval(t, NewTree(n, TreeFull), w, single).Loss,
		mustEval(t, NewTree(n, TreeOnline), w, single).Loss,
		mustEval(t, NewTree(n, TreeVanilla), w, single).Loss,
		mustEval(t, NewIdentity(n), w, single).Loss,
	}
	for i := 1; i < len(order); i++ {
		if !(order[i-1] < order[i]) {
			t.Errorf("ordering violated at %d: %v", i, order)
		}
	}
}

func TestOptimalMomentumWorkload(t *testing.T) {
	t.Parallel()
	// Independent implementation (float64): β = 0 with cooldown, n = 256: optimal 1502.253, and the
	// prefix-optimal C applied to this workload gives 1507.484 (3 decimals).
	n := 256
	w := Momentum(n, 0, LinearCooldown(n, 64, 0.05))
	f, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	single := participation.AtMostOnce
	if m := mustEval(t, f, w, single); !near(m.Loss, 1502.253, 1e-3+1e-8*m.Loss) {
		t.Errorf("optimal for cooldown: %.4f, want 1502.253 (%d iterations)", m.Loss, f.Status().Iterations)
	}
	fp, err := OptimalSingle(context.Background(), Prefix(n), FixedPointOptions{Gap: 1e-10})
	if err != nil {
		t.Fatal(err)
	}
	if m := mustEval(t, fp, w, single); !near(m.Loss, 1507.484, 2e-3) {
		t.Errorf("opt-prefix on cooldown: %.4f, want 1507.484", m.Loss)
	}
	// β = 0.9, η ≡ 1 (dense eigensolver path): 65567.194 (the reference needed
	// ≈800 plain iterations; Anderson acceleration needs well under 100).
	wm := Momentum(n, 0.9, nil)
	fm, err := OptimalSingle(context.Background(), wm, FixedPointOptions{Gap: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	if m := mustEval(t, fm, wm, single); !near(m.Loss, 65567.194, 1e-3+1e-8*m.Loss) || !fm.Status().Converged {
		t.Errorf("optimal for momentum 0.9: %.4f, want 65567.194; %+v", m.Loss, fm.Status())
	}
	t.Logf("momentum 0.9: %+v", fm.Status())
}

// Anderson acceleration and the plain iteration reach the same optimum.
func TestOptimalAndersonMatchesPlain(t *testing.T) {
	w := Prefix(128)
	a, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-11})
	if err != nil {
		t.Fatal(err)
	}
	p, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-11, Anderson: -1})
	if err != nil {
		t.Fatal(err)
	}
	la, lp := mustEval(t, a, w, participation.AtMostOnce).Loss, mustEval(t, p, w, participation.AtMostOnce).Loss
	if !near(la, lp, 2e-11*lp) || a.Status().Iterations >= p.Status().Iterations {
		t.Errorf("anderson %v (%d it) vs plain %v (%d it)", la, a.Status().Iterations, lp, p.Status().Iterations)
	}
}

func TestOptimalN1024(t *testing.T) {
	t.Parallel()
	// Independent implementation (float64): loss 8944.3292, C[0][0] = 0.39549, C[1][0] = 0.23536,
	// C[1][1] = 0.41994, C[n−1][n−1] = 1. The reference stopped at gap 1e-9;
	// the loss is quadratic at the optimum, so its X (and C) is only pinned
	// to about sqrt(1e-9) ≈ 3e-5: tolerance 5e-5 on the entries, 1e-4 on the
	// 4-decimal loss and RMSE.
	f, err := OptimalSingle(context.Background(), Prefix(1024), FixedPointOptions{Gap: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	m := mustEval(t, f, Prefix(1024), participation.AtMostOnce)
	c, _ := f.Factor()
	if !near(m.Loss, 8944.3292, 1e-4+1e-8*m.Loss) || !near(c.At(0, 0), 0.39549, 5e-5) || !near(c.At(1, 0), 0.23536, 5e-5) ||
		!near(c.At(1, 1), 0.41994, 5e-5) || !near(c.At(1023, 1023), 1, 5e-5) || !near(m.RMSE, 2.9555, 1e-4) {
		t.Errorf("n=1024: loss %v rmse %v C00 %v C10 %v C11 %v Cnn %v", m.Loss, m.RMSE, c.At(0, 0), c.At(1, 0), c.At(1, 1), c.At(1023, 1023))
	}
	t.Logf("%+v", f.Status())
}

// TestOptimalFactoredForm: OptimalSingle returns X = YᵀY in factored form:
// N, String and Status do not form X (nor C); the first method that needs
// them forms both once, and they are bit-identical to a strategy built
// eagerly from the same X (NewFactorization, the path before X was kept
// factored, and the cache's rebuild); the loss of the explicit C agrees with
// the primal the iteration reported (printed to 10 digits) to 1e-9
// relative, and CᵀC = X to 1e-12.
func TestOptimalFactoredForm(t *testing.T) {
	for _, dense := range []bool{false, true} {
		n := 48
		w := Prefix(n)
		f, err := OptimalSingle(context.Background(), w, FixedPointOptions{Gap: 1e-9, Dense: dense})
		if err != nil {
			t.Fatal(err)
		}
		if f.N() != n || f.String() != "optimal" || !f.Status().Converged {
			t.Fatalf("dense=%v: N %d, name %q, status %+v", dense, f.N(), f.String(), f.Status())
		}
		if f.x != nil || f.c != nil || f.form == nil {
			t.Fatalf("dense=%v: X or C formed before use", dense)
		}
		x := f.Gram() // forms X and C
		if f.x == nil || f.c == nil || f.form != nil {
			t.Fatalf("dense=%v: X and C not formed by Gram", dense)
		}
		eager, err := NewFactorization("optimal", x, f.Status())
		if err != nil {
			t.Fatal(err)
		}
		c, _ := f.Factor()
		ce, _ := eager.Factor()
		if !mat.Equal(x, eager.Gram()) || !mat.Equal(c, ce) || f.Bands() != eager.Bands() || f.Bands() != n {
			t.Fatalf("dense=%v: factored strategy differs from the eager one (bands %d, %d)", dense, f.Bands(), eager.Bands())
		}
		canon, err := canonical(f)
		if err != nil {
			t.Fatal(err)
		}
		cc, _ := canon.Factor()
		if !mat.Equal(cc, ce) || !mat.Equal(canon.Gram(), x) {
			t.Fatalf("dense=%v: the cache's rebuild differs", dense)
		}
		if !mat.EqualApprox(gramOf(c), x, 1e-12) {
			t.Fatalf("dense=%v: CᵀC ≠ X", dense)
		}
		m := mustEval(t, f, w, participation.AtMostOnce)
		var primal float64
		if _, err := fmt.Sscanf(f.Status().Message, "primal %g", &primal); err != nil {
			t.Fatal(err)
		}
		if !near(m.Loss, primal, 1e-9*primal) {
			t.Fatalf("dense=%v: loss %.12g, primal %.12g", dense, m.Loss, primal)
		}
	}
}
