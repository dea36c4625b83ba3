package privacy

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func worEvent(n, m int, sigma float64, steps int) Event {
	return SelfComposed{SampledWithoutReplacement{n, m, Gaussian{sigma}}, steps}
}

// TestWORRDPTFPrivacyVector: TF-Privacy's rdp_accountant_test.py,
// test_compute_rdp_sequence_without_replacement: q = 0.01, noise multiplier
// 2.5, 50 steps; the RDP at orders 1.5 .. 1024 (TF-Privacy asserts its own
// values to an absolute 1e-5; so do we, the values being printed to that
// precision). Orders 512 and 1024 are above the forward-difference range.
// At order 256 TF-Privacy's 792.838516 is 1.7e-4 relative below the bound
// itself: its forward differences of e^{i(i−1)/(2σ²)} up to the 257th lose
// digits to cancellation in float64. The bound evaluated with the
// differences as exact sums in 400-digit arithmetic (mpmath, independently
// of this code) is 792.974427366, which we match to 1e-6 relative.
func TestWORRDPTFPrivacyVector(t *testing.T) {
	orders := []float64{1.5, 2.5, 5, 50, 100, 256, 512, 1024}
	want := []float64{0.003470, 0.004638, 0.0087633, 0.098474, 167.766388, 792.974427366, 1817.35871, 3865.55029}
	a := NewRDP(orders, CKS)
	if err := a.Compose(worEvent(10000, 100, 2.5, 50), 1); err != nil {
		t.Fatal(err)
	}
	got := a.(*RDP).RDPs()
	for i := range orders {
		if math.Abs(got[i]-want[i]) > max(1e-5, 1e-6*want[i]) {
			t.Errorf("order %g: RDP %.7g, TF-Privacy %.7g", orders[i], got[i], want[i])
		}
	}
}

// TestWORSupports: as dp_accounting's RDP accountant test_supports, an
// event sampled without replacement is accounted under replace-one only and
// a Poisson-sampled one never under replace-one; a mix is refused by every
// accountant with the reason; the exact and zCDP accountants refuse
// amplification without replacement; a sample of 0 records is free
// (dp_accounting's test_zero_fixed_batch_sample: ε = 0 at δ = 1e-10).
func TestWORSupports(t *testing.T) {
	wor := SampledWithoutReplacement{1000, 10, Gaussian{1}}
	poisson := PoissonSampled{0.1, Gaussian{1}}
	for _, name := range []string{"rdp", "pld"} {
		newAcct, _ := NewByName(name, nil)
		a := newAcct()
		if err := a.Supports(wor); err != nil {
			t.Errorf("%s refuses %v: %v", name, wor, err)
		}
		if err := a.Supports(SampledWithoutReplacement{1000, 10, Composed{[]Event{Gaussian{1}, Gaussian{2}}}}); err != nil {
			t.Errorf("%s refuses a composed Gaussian sampled without replacement: %v", name, err)
		}
		for _, bad := range []Event{
			Neighbouring{AddRemove, wor}, Neighbouring{ZeroOut, wor}, Neighbouring{ReplaceOne, poisson},
			Composed{[]Event{wor, poisson}},
			SampledWithoutReplacement{1000, 10, PureDP{1}},
		} {
			err := a.Supports(bad)
			if err == nil {
				t.Errorf("%s supports %v", name, bad)
				continue
			}
			checkRefusal(t, name, err)
		}
		// Composing across relations is refused and leaves a unchanged.
		if err := a.Compose(wor, 3); err != nil {
			t.Fatal(err)
		}
		before, _ := a.Epsilon(1e-5)
		if err := a.Compose(poisson, 1); err == nil || !strings.Contains(err.Error(), "replace-one") {
			t.Errorf("%s composed add/remove after replace-one: %v", name, err)
		}
		if after, _ := a.Epsilon(1e-5); after != before || after.Adjacency != ReplaceOne {
			t.Errorf("%s: %v after a refused compose, %v before", name, after, before)
		}
		z := newAcct()
		_ = z.Compose(SampledWithoutReplacement{1000, 0, Gaussian{1}}, 1)
		if g, err := z.Epsilon(1e-10); err != nil || g.Epsilon != 0 {
			t.Errorf("%s: empty sample gives %v, %v", name, g, err)
		}
		if d, err := z.Delta(1e-10); err != nil || d != 0 {
			t.Errorf("%s: empty sample δ %v, %v", name, d, err)
		}
	}
	for _, name := range []string{"exact", "zcdp", "zcdp-cks"} {
		newAcct, _ := NewByName(name, nil)
		err := newAcct().Supports(wor)
		if err == nil || !strings.Contains(err.Error(), "without replacement") && !strings.Contains(err.Error(), "RDP or PLD") {
			t.Errorf("%s: Supports(%v) = %v, want a refusal naming the reason", name, wor, err)
		}
		// The whole population is no sampling: accounted as the Gaussian.
		if err := newAcct().Supports(SampledWithoutReplacement{10, 10, Gaussian{1}}); err != nil {
			t.Errorf("%s refuses a sample of the whole population: %v", name, err)
		}
	}
}

// replaceOneDelta is the oracle: the hockey-stick divergence at eps of one
// round in one dimension between the two mixtures a replace-one pair
// produces, P = (1−q)N(0,s²) + qN(a,s²) and Q = (1−q)N(0,s²) + qN(b,s²)
// (a = x − v, b = x' − v for the replaced record x → x' and the other
// records all at v, every value clipped to [−1, 1]; shifted by the
// others' sum), integrated numerically (Gauss–Legendre, 2,000 pieces of 32
// points over 40 s around the means).
func replaceOneDelta(q, s, a, b, eps float64) float64 {
	n := func(x, m float64) float64 {
		z := (x - m) / s
		return math.Exp(-z*z/2) / (s * math.Sqrt(2*math.Pi))
	}
	f := func(x float64) float64 {
		p := (1-q)*n(x, 0) + q*n(x, a)
		qq := (1-q)*n(x, 0) + q*n(x, b)
		return math.Max(0, p-math.Exp(eps)*qq)
	}
	return integrate(f, -2-20*s, 2+20*s, 2000)
}

// TestWOROracle: over replace-one pairs (x, x', v) on a grid of [−1, 1]³,
// the largest oracle δ of one round with clip 1 and noise std s must be
// upper-bounded by the PLD (tightly: the worst pair, v = −1, x = 1, x' = −1,
// attains the dominating pair, so within 1e-3 relative) and by the RDP
// accountant, both at noise multiplier s/2 (the replace-one sensitivity of
// the clipped sum is 2). Negative control: at s/1 (sensitivity 1, the
// add/remove convention) the PLD's δ falls below the oracle.
func TestWOROracle(t *testing.T) {
	vals := []float64{-1, -0.5, 0, 0.5, 1}
	for _, c := range []struct{ n, m int }{{10, 1}, {100, 30}} {
		q := float64(c.m) / float64(c.n)
		for _, s := range []float64{1, 3} {
			for _, eps := range []float64{0.1, 0.5, 1.5} {
				worst := 0.0
				for _, x := range vals {
					for _, x2 := range vals {
						for _, v := range vals {
							worst = math.Max(worst, replaceOneDelta(q, s, x-v, x2-v, eps))
						}
					}
				}
				what := fmt.Sprintf("q = %g, s = %g, ε = %g", q, s, eps)
				pld := NewPLD(PLDConfig{})
				_ = pld.Compose(SampledWithoutReplacement{c.n, c.m, Gaussian{s / 2}}, 1)
				dp, err := pld.Delta(eps)
				if err != nil || dp < worst*(1-1e-6) || dp > worst*(1+1e-3)+1e-12 {
					t.Errorf("%s: PLD δ %.6g (%v), oracle %.6g", what, dp, err, worst)
				}
				rdp := NewRDP(nil, CKS)
				_ = rdp.Compose(SampledWithoutReplacement{c.n, c.m, Gaussian{s / 2}}, 1)
				if dr, err := rdp.Delta(eps); err != nil || dr < worst*(1-1e-6) {
					t.Errorf("%s: RDP δ %.6g (%v) below the oracle %.6g", what, dr, err, worst)
				}
				wrong := NewPLD(PLDConfig{})
				_ = wrong.Compose(SampledWithoutReplacement{c.n, c.m, Gaussian{s}}, 1)
				if dw, _ := wrong.Delta(eps); !(dw < worst*0.9) {
					t.Errorf("%s: negative control: PLD δ at sensitivity 1 is %.6g, oracle %.6g (should be below)", what, dw, worst)
				}
			}
		}
	}
}

// TestWORMonotone: ε is non-increasing in σ, non-decreasing in the sample
// size and in the rounds, at most the unsampled Gaussian's (sampling
// without replacement never costs more than no sampling), and the PLD's is
// at most the RDP's.
func TestWORMonotone(t *testing.T) {
	eps := func(name string, e Event) float64 {
		newAcct, _ := NewByName(name, nil)
		a := newAcct()
		if err := a.Compose(e, 1); err != nil {
			t.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		return g.Epsilon
	}
	for _, name := range []string{"rdp", "pld"} {
		prev := math.Inf(1)
		for _, sigma := range []float64{0.3, 0.6, 1, 2, 5} {
			e := eps(name, worEvent(6000, 1000, sigma, 60))
			if e > prev*(1+1e-9) {
				t.Errorf("%s: ε %g at σ = %g above %g at a smaller σ", name, e, sigma, prev)
			}
			prev = e
			if u := eps(name, SelfComposed{Gaussian{sigma}, 60}); e > u*(1+1e-6) {
				t.Errorf("%s: ε %g sampled above the unsampled %g (σ = %g)", name, e, u, sigma)
			}
		}
		prev = 0
		for _, m := range []int{1, 10, 100, 1000, 6000} {
			e := eps(name, worEvent(6000, m, 1, 60))
			if e < prev*(1-1e-9) {
				t.Errorf("%s: ε %g at m = %d below %g at a smaller sample", name, e, m, prev)
			}
			prev = e
		}
	}
	for _, sigma := range []float64{0.5, 1, 3} {
		r, p := eps("rdp", worEvent(3400, 100, sigma, 1500)), eps("pld", worEvent(3400, 100, sigma, 1500))
		if p > r*(1+1e-9) {
			t.Errorf("σ = %g: PLD ε %g above the RDP's %g", sigma, p, r)
		}
	}
}

// TestWORExtremes: sampling without replacement at the extremes (σ from
// 1e-8 to 1e8, up to 1e9 rounds, samples of 1 of 10 to 1 of 1e9): every ε
// and every calibration answers or refuses in one line within the limit,
// never NaN, and a calibrated σ meets its target.
func TestWORExtremes(t *testing.T) {
	type acct struct {
		name   string
		pops   [][2]int
		sigmas []float64
	}
	accts := []acct{
		{"rdp", [][2]int{{10, 1}, {6000, 1000}, {1_000_000_000, 1}}, extremeSigmas},
		// The PLD's cost grows with the sampling ratio and the rounds:
		// its extremes are those of the Poisson-sampled PLD (q = 0.01).
		{"pld", [][2]int{{100, 1}, {1_000_000_000, 1}}, []float64{1e-8, 1e-3, 1, 1e8}},
	}
	if testing.Short() {
		accts = accts[:1]
	}
	for _, c := range accts {
		name := c.name
		newAcct, _ := NewByName(name, nil)
		for _, p := range c.pops {
			for _, T := range extremeSteps {
				for _, sigma := range c.sigmas {
					what := fmt.Sprintf("%s, %d of %d, σ = %g, %d rounds", name, p[1], p[0], sigma, T)
					a := newAcct()
					if err := a.Compose(worEvent(p[0], p[1], sigma, T), 1); err != nil {
						checkRefusal(t, what, err)
						continue
					}
					for _, delta := range []float64{1e-300, 1e-6} {
						var g Guarantee
						var err error
						within(t, 2*extremeCallLimit, what, func() { g, err = a.Epsilon(delta) })
						if err != nil {
							checkRefusal(t, what, err)
						} else if math.IsNaN(g.Epsilon) || g.Epsilon < 0 {
							t.Errorf("%s: %v", what, g)
						}
					}
				}
				targets := []float64{1e-3, 1, 1e3}
				if name == "pld" {
					// As in TestExtremesCalibrate: the PLD calibrates
					// at the extreme targets and step counts.
					if T == 1000 || p[1] != 1 || p[0] != 100 {
						continue
					}
					targets = []float64{1e-8, 1e5}
				}
				for _, target := range targets {
					what := fmt.Sprintf("%s calibration, %d of %d, %d rounds, ε = %g", name, p[1], p[0], T, target)
					var sigma float64
					var g Guarantee
					var err error
					factory := func(s float64) Event { return worEvent(p[0], p[1], s, T) }
					within(t, 2*extremeCallLimit, what, func() { sigma, g, err = Calibrate(target, 1e-6, factory, newAcct, 1e-6) })
					if err != nil {
						checkRefusal(t, what, err)
					} else if math.IsNaN(sigma) || g.Epsilon > target*(1+1e-9) {
						t.Errorf("%s: σ = %g gives %v", what, sigma, g)
					}
				}
			}
		}
	}
}

// TestWORCalibrationTime: 2,000 rounds of a fixed-size cohort (1,000 of
// 6,000) calibrate within a second by either accountant (the bound is
// doubled for a loaded machine).
func TestWORCalibrationTime(t *testing.T) {
	for _, name := range []string{"rdp", "pld"} {
		newAcct, _ := NewByName(name, nil)
		start := time.Now()
		_, g, err := Calibrate(4, 1e-5, func(s float64) Event { return worEvent(6000, 1000, s, 2000) }, newAcct, 1e-6)
		d := time.Since(start)
		if err != nil || d > 2*time.Second || g.Adjacency != ReplaceOne {
			t.Errorf("%s: %v, %v in %v", name, g, err, d)
		}
		t.Logf("%s: %v in %v", name, g, d)
	}
}
