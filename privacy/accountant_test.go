package privacy

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// accountants is the conformance table: every Accountant implementation, with
// an event it can account whose privacy loss decreases with sigma.
var accountants = []struct {
	name   string
	method string
	new    func() Accountant
	event  func(sigma float64) Event
}{
	{"exact", MethodExactGDP, NewExact, func(s float64) Event { return Gaussian{s} }},
	{"zcdp", MethodZCDP, func() Accountant { return NewZCDP(ZCDPStandard) }, func(s float64) Event { return Gaussian{s} }},
	{"zcdp-cks", MethodZCDPCKS, func() Accountant { return NewZCDP(ZCDPCKS) }, func(s float64) Event { return Gaussian{s} }},
	{"rdp-cks", MethodRDPCKS, func() Accountant { return NewRDP(nil, CKS) }, func(s float64) Event { return PoissonSampled{0.05, Gaussian{s}} }},
	{"rdp-mironov", MethodRDPMironov, func() Accountant { return NewRDP(nil, Mironov) }, func(s float64) Event { return PoissonSampled{0.05, Gaussian{s}} }},
	{"pld", MethodPLD, func() Accountant { return NewPLD(PLDConfig{Discretization: 1e-3}) }, func(s float64) Event { return PoissonSampled{0.05, Gaussian{s}} }},
	{"pld-optimistic", MethodPLDOptimistic, func() Accountant { return NewPLD(PLDConfig{Optimistic: true}) }, func(s float64) Event { return PoissonSampled{0.05, Gaussian{s}} }},
	{"pld-puredp", MethodPLD, func() Accountant { return NewPLD(PLDConfig{}) }, func(s float64) Event { return PoissonSampled{0.3, PureDP{1 / s}} }},
	{"rdp-cks-abs", MethodRDPCKS, func() Accountant { return NewRDPFrac(nil, CKS, FracAbsSeries) }, func(s float64) Event { return PoissonSampled{0.05, Gaussian{s}} }},
}

func epsOf(t testing.TB, a Accountant, delta float64) Guarantee {
	t.Helper()
	g, err := a.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestAccountantConformance(t *testing.T) {
	for _, c := range accountants {
		t.Run(c.name, func(t *testing.T) {
			// Empty accountant: ε = 0, δ = 0.
			if g := epsOf(t, c.new(), 1e-6); g.Epsilon != 0 || g.Method != c.method || g.Delta != 1e-6 {
				t.Errorf("empty: %+v", g)
			}
			// Compose(e, 0) is a no-op; Compose(e, n) = n × Compose(e, 1) = SelfComposed.
			a0 := c.new()
			_ = a0.Compose(c.event(1), 0)
			if g := epsOf(t, a0, 1e-6); g.Epsilon != 0 {
				t.Errorf("count 0: %v", g)
			}
			a1, a2, a3 := c.new(), c.new(), c.new()
			_ = a1.Compose(c.event(1), 7)
			for range 7 {
				_ = a2.Compose(c.event(1), 1)
			}
			_ = a3.Compose(SelfComposed{c.event(1), 7}, 1)
			g1, g2, g3 := epsOf(t, a1, 1e-6), epsOf(t, a2, 1e-6), epsOf(t, a3, 1e-6)
			if math.Abs(g1.Epsilon-g2.Epsilon) > 1e-9*g1.Epsilon || math.Abs(g1.Epsilon-g3.Epsilon) > 1e-9*g1.Epsilon {
				t.Errorf("count 7 %v, 7 × 1 %v, SelfComposed %v", g1, g2, g3)
			}
			// Order of composition does not matter.
			b1, b2 := c.new(), c.new()
			_ = b1.Compose(c.event(0.8), 2)
			_ = b1.Compose(c.event(3), 5)
			_ = b2.Compose(Composed{[]Event{c.event(3), c.event(0.8), SelfComposed{c.event(3), 4}, c.event(0.8)}}, 1)
			if e1, e2 := epsOf(t, b1, 1e-5).Epsilon, epsOf(t, b2, 1e-5).Epsilon; math.Abs(e1-e2) > 1e-9*e1 {
				t.Errorf("composition order changes ε: %g vs %g", e1, e2)
			}
			// ε decreases in δ; Delta is consistent with Epsilon.
			prev := math.Inf(1)
			for _, delta := range []float64{1e-12, 1e-9, 1e-6, 1e-3, 0.1} {
				g := epsOf(t, a1, delta)
				if g.Epsilon > prev {
					t.Errorf("ε(δ = %g) = %g > ε at smaller δ %g", delta, g.Epsilon, prev)
				}
				prev = g.Epsilon
				if d, err := a1.Delta(g.Epsilon); err != nil || d > delta*(1+1e-6) {
					t.Errorf("Delta(%g) = %g, %v; want <= %g", g.Epsilon, d, err, delta)
				}
			}
			// Guarantees print method, delta and (when present) order.
			s := epsOf(t, a1, 1e-6).String()
			if !strings.Contains(s, c.method) || !strings.Contains(s, "δ = 1e-06") {
				t.Errorf("String() = %q lacks method or delta", s)
			}
			if g := epsOf(t, a1, 1e-6); g.Order > 0 && !strings.Contains(s, "order") {
				t.Errorf("String() = %q lacks the order", s)
			}
			// Errors are prefixed and leave the accountant unchanged.
			before := epsOf(t, a1, 1e-6).Epsilon
			for _, bad := range []Event{nil, Gaussian{-1}, SelfComposed{Gaussian{1}, -2}, PoissonSampled{2, Gaussian{1}}} {
				if err := a1.Compose(bad, 1); err == nil || !strings.HasPrefix(err.Error(), "privacy: ") {
					t.Errorf("Compose(%v) = %v", bad, err)
				}
			}
			if err := a1.Compose(c.event(1), -1); err == nil {
				t.Error("negative count accepted")
			}
			if after := epsOf(t, a1, 1e-6).Epsilon; after != before {
				t.Errorf("failed Compose changed ε from %g to %g", before, after)
			}
			for _, d := range []float64{-1, 1.5, math.NaN()} {
				if _, err := a1.Epsilon(d); err == nil {
					t.Errorf("Epsilon(%g) accepted", d)
				}
			}
			for _, e := range []float64{-1, math.Inf(1), math.NaN()} {
				if _, err := a1.Delta(e); err == nil {
					t.Errorf("Delta(%g) accepted", e)
				}
			}
		})
	}
}

func TestEpsilonMonotone(t *testing.T) {
	// Property: ε decreases in σ and increases in the number of steps.
	for _, c := range accountants {
		for _, delta := range []float64{1e-5, 1e-8} {
			prev := math.Inf(1)
			for _, sigma := range []float64{0.4, 0.6, 0.9, 1.3, 2, 3, 5, 8} {
				a := c.new()
				_ = a.Compose(c.event(sigma), 100)
				e := epsOf(t, a, delta).Epsilon
				if !(e < prev) {
					t.Errorf("%s δ = %g: ε(σ = %g) = %g not below %g", c.name, delta, sigma, e, prev)
				}
				prev = e
			}
			prev = 0
			for _, steps := range []int{1, 10, 100, 1000, 5000} {
				a := c.new()
				_ = a.Compose(c.event(1.2), steps)
				e := epsOf(t, a, delta).Epsilon
				if !(e > prev) {
					t.Errorf("%s δ = %g: ε(%d steps) = %g not above %g", c.name, delta, steps, e, prev)
				}
				prev = e
			}
		}
	}
}

func TestAccountantOrdering(t *testing.T) {
	// Property: for the same (non-sampled) Gaussians,
	//   zCDP (Lemma 3.8) >= zCDP-CKS >= exact           (looser conversions of tighter descriptions),
	//   RDP-CKS >= zCDP-CKS, RDP-Mironov >= zCDP         (the same RDP curve on a grid vs continuous α),
	//   zCDP >= RDP-CKS >= exact                          (for the default accountants).
	// The last one needs the optimal order inside DefaultOrders' range
	// [1.1, 512]: checked when ε(zCDP) <= 30 and σ <= 20 (tolerance 1e-9 relative).
	for _, sigma := range []float64{0.3, 0.5, 1, 2, 4.22468, 8, 20} {
		for _, steps := range []int{1, 10, 1000} {
			for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
				e := Gaussian{sigma}
				get := func(a Accountant) float64 {
					if err := a.Compose(e, steps); err != nil {
						t.Fatal(err)
					}
					return epsOf(t, a, delta).Epsilon
				}
				z, zc := get(NewZCDP(ZCDPStandard)), get(NewZCDP(ZCDPCKS))
				rm, rc := get(NewRDP(nil, Mironov)), get(NewRDP(nil, CKS))
				ex := get(NewExact())
				tol := 1e-9 * z
				ok := z >= zc-tol && zc >= ex-tol && rc >= zc-tol && rm >= z-tol
				if z <= 30 {
					ok = ok && z >= rc-tol && rc >= ex-tol
				}
				if !ok {
					t.Errorf("σ = %g, %d steps, δ = %g: zcdp %g, rdp-mironov %g, rdp-cks %g, zcdp-cks %g, exact %g",
						sigma, steps, delta, z, rm, rc, zc, ex)
				}
			}
		}
	}
}

func TestGuaranteeString(t *testing.T) {
	cases := []struct {
		g    Guarantee
		want string
	}{
		{Guarantee{2.31412, 1e-5, MethodZCDP, 0, AnyAdjacency}, "ε = 2.314 at δ = 1e-05 (zcdp)"},
		{Guarantee{7.32911117, 1e-5, MethodRDPCKS, 3.9, AnyAdjacency}, "ε = 7.329 at δ = 1e-05 (rdp-cks, order 3.9)"},
		{Guarantee{0.87931, 1e-6, MethodExactGDP, 0, AnyAdjacency}, "ε = 0.8793 at δ = 1e-06 (exact-gdp)"},
		{Guarantee{1.78e7, 1e-6, MethodRDPCKS, 1.1, AnyAdjacency}, "ε = 1.78e+07 at δ = 1e-06 (rdp-cks, order 1.1)"},
		{Guarantee{2.31412, 1e-5, MethodRDPCKS, 9.5, AddRemove}, "ε = 2.314 at δ = 1e-05 (rdp-cks, order 9.5; add/remove)"},
		{Guarantee{0.87931, 1e-6, MethodExactGDP, 0, ZeroOut}, "ε = 0.8793 at δ = 1e-06 (exact-gdp; zero-out)"},
		{Guarantee{3.5, 1e-6, MethodPLD, 0, ReplaceOne}, "ε = 3.500 at δ = 1e-06 (pld; replace-one)"},
	}
	for _, c := range cases {
		if s := c.g.String(); s != c.want {
			t.Errorf("String() = %q, want %q", s, c.want)
		}
	}
}

func TestEventStringAndValidate(t *testing.T) {
	e := SelfComposed{PoissonSampled{0.01, Composed{[]Event{Gaussian{1.5}, PureDP{0.1}}}}, 3}
	if s := fmt.Sprint(e); s != "SelfComposed(PoissonSampled(q=0.01, Composed[Gaussian(σ=1.5) PureDP(ε=0.1)]), 3)" {
		t.Errorf("String() = %q", s)
	}
	if err := Validate(e); err != nil {
		t.Error(err)
	}
	if err := Validate(Composed{[]Event{Gaussian{1}, PureDP{-1}}}); err == nil {
		t.Error("negative PureDP ε accepted")
	}
}
