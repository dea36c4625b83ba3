package privacy

import (
	"math"
	"strings"
	"testing"
)

func TestLedgerSpending(t *testing.T) {
	l, err := NewLedgerForTarget(1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	total := l.Total()
	if g, _ := zcdpEpsilon(total, 1e-5, ZCDPStandard); math.Abs(g.Epsilon-1) > 1e-12 {
		t.Fatalf("budget %g converts to ε = %g, want 1", total, g.Epsilon)
	}
	// DP-AGD-like: a gradient at rho_ng and a noisy max at rho_nmax per round.
	rhoNG, rhoMax := total/40, total/200
	round := 0
	for ; l.CanSpend(rhoNG + rhoMax); round++ {
		if err := l.SpendGaussian(round, "gradient", GaussianSigma(rhoNG)); err != nil {
			t.Fatal(err)
		}
		if err := l.SpendPureDP(round, "noisy-max", PureDPEpsilon(rhoMax)); err != nil {
			t.Fatal(err)
		}
	}
	if want := int(total / (rhoNG + rhoMax)); round != want {
		t.Errorf("ran %d rounds, want %d", round, want)
	}
	if math.Abs(l.Spent()+l.Remaining()-total) > 1e-12*total {
		t.Errorf("spent %g + remaining %g != total %g", l.Spent(), l.Remaining(), total)
	}
	if r := l.SpentInRound(3); math.Abs(r-(rhoNG+rhoMax)) > 1e-15 {
		t.Errorf("round 3 spent %g, want %g", r, rhoNG+rhoMax)
	}
	if n := len(l.Expenses()); n != 2*round {
		t.Errorf("%d expenses, want %d", n, 2*round)
	}
	// Overspending is refused and leaves the ledger unchanged.
	before := l.Spent()
	err = l.Spend(round, "gradient", l.Remaining()+rhoNG)
	if err == nil || !strings.HasPrefix(err.Error(), "privacy: ledger overspent") {
		t.Errorf("overspend error = %v", err)
	}
	if l.Spent() != before || len(l.Expenses()) != 2*round {
		t.Error("refused expense was recorded")
	}
	// The remaining budget can be spent exactly, after which nothing fits.
	if err := l.Spend(round, "last", l.Remaining()); err != nil {
		t.Fatal(err)
	}
	if l.CanSpend(1e-9 * total) {
		t.Error("exhausted ledger still accepts expenses")
	}
	g, err := l.Guarantee(1e-5, ZCDPStandard)
	if err != nil || math.Abs(g.Epsilon-1) > 1e-9 {
		t.Errorf("exhausted ledger: %v, %v; want ε = 1 at δ = 1e-5", g, err)
	}
	gc, _ := l.Guarantee(1e-5, ZCDPCKS)
	if !(gc.Epsilon < g.Epsilon) {
		t.Errorf("CKS conversion %v not tighter than standard %v", gc, g)
	}
}

func TestLedgerErrors(t *testing.T) {
	if _, err := NewLedger(0); err == nil {
		t.Error("NewLedger(0) should fail")
	}
	if _, err := NewLedger(math.Inf(1)); err == nil {
		t.Error("NewLedger(Inf) should fail")
	}
	l, _ := NewLedger(1)
	for _, rho := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := l.Spend(0, "x", rho); err == nil {
			t.Errorf("Spend(%g) should fail", rho)
		}
	}
	if err := l.SpendGaussian(0, "x", 0); err == nil {
		t.Error("SpendGaussian(σ = 0) should fail")
	}
	if l.Spent() != 0 {
		t.Error("failed expenses were recorded")
	}
}

// TestZCDPBudgetFor: the standard budget is the closed form (ε = 4, δ = 1e-5:
// (√(4 + ln 1e5) − √(ln 1e5))², by hand); the CKS budget is larger and
// converts back to at most ε, within 1e-9 of it.
func TestZCDPBudgetFor(t *testing.T) {
	l := math.Log(1e5)
	want := math.Pow(math.Sqrt(4+l)-math.Sqrt(l), 2)
	std, err := ZCDPBudgetFor(4, 1e-5, ZCDPStandard)
	if err != nil || math.Abs(std-want) > 1e-15 {
		t.Fatalf("standard budget %v (%v), hand %v", std, err, want)
	}
	cks, err := ZCDPBudgetFor(4, 1e-5, ZCDPCKS)
	if err != nil || !(cks > std) {
		t.Fatalf("CKS budget %v (%v), standard %v", cks, err, std)
	}
	g, _ := zcdpEpsilon(cks, 1e-5, ZCDPCKS)
	if g.Epsilon > 4 || g.Epsilon < 4-1e-9 {
		t.Fatalf("CKS budget %v converts to ε = %.12g", cks, g.Epsilon)
	}
}
