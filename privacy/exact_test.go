package privacy

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// Choquette-Choo et al. 2023 Table 4 noise multipliers (sensitivity-normalized, one Gaussian, no
// amplification) and the epsilon an independent implementation (float64) gives for them at δ = 1e-6.
var bmf23Table4 = []struct{ sigma, eps float64 }{
	{4.22468, 1.0000},
	{2.23048, 2.0000},
	{1.19352, 4.0000},
	{0.65294, 7.9999},
	{0.36861, 16.0001},
	{4.76079, 0.8793}, // Multi-epoch MF row, independent implementation
	{1.0, 4.8866},     // independent implementation
}

func exactEpsilon(t testing.TB, delta float64, events ...Event) Guarantee {
	t.Helper()
	a := NewExact()
	for _, e := range events {
		if err := a.Compose(e, 1); err != nil {
			t.Fatal(err)
		}
	}
	g, err := a.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestExactBMF23Table4(t *testing.T) {
	// Tolerance 6e-5: the reference epsilons are printed to 4 decimals.
	const tol = 6e-5
	for _, c := range bmf23Table4 {
		g := exactEpsilon(t, 1e-6, Gaussian{c.sigma})
		if math.Abs(g.Epsilon-c.eps) > tol {
			t.Errorf("σ = %g: ε = %.6f, want %.4f ± %g", c.sigma, g.Epsilon, c.eps, tol)
		}
		if g.Method != MethodExactGDP || g.Delta != 1e-6 || g.Order != 0 {
			t.Errorf("σ = %g: guarantee %+v lacks method/delta", c.sigma, g)
		}
	}
}

func TestExactComposition(t *testing.T) {
	// Independent implementation: 100 × Gaussian σ = 10 ≡ one Gaussian σ = 1 → ε = 4.8866 (tolerance 6e-5).
	a := NewExact()
	if err := a.Compose(Gaussian{10}, 100); err != nil {
		t.Fatal(err)
	}
	g, _ := a.Epsilon(1e-6)
	one := exactEpsilon(t, 1e-6, Gaussian{1})
	if math.Abs(g.Epsilon-4.8866) > 6e-5 || math.Abs(g.Epsilon-one.Epsilon) > 1e-9 {
		t.Errorf("100 × σ=10: ε = %.6f, one σ=1: %.6f, want both 4.8866", g.Epsilon, one.Epsilon)
	}
	// The same through the event tree: SelfComposed inside Composed.
	ev := Composed{[]Event{SelfComposed{Gaussian{10}, 50}, SelfComposed{Gaussian{10}, 50}}}
	if g2 := exactEpsilon(t, 1e-6, ev); math.Abs(g2.Epsilon-g.Epsilon) > 1e-12 {
		t.Errorf("event tree: ε = %.9f, want %.9f", g2.Epsilon, g.Epsilon)
	}
}

// gaussianDeltaByIntegration is an oracle for the (ε, δ) curve of one
// Gaussian mechanism with noise multiplier sigma: δ(ε) = ∫ max(0, p(x) − e^ε q(x)) dx
// with p = N(1, σ²), q = N(0, σ²), integrated numerically (Gauss–Legendre,
// split at the point where the likelihood ratio crosses e^ε).
func gaussianDeltaByIntegration(sigma, eps float64) float64 {
	pdf := func(x, m float64) float64 {
		z := (x - m) / sigma
		return math.Exp(-z*z/2) / (sigma * math.Sqrt(2*math.Pi))
	}
	f := func(x float64) float64 { return math.Max(0, pdf(x, 1)-math.Exp(eps)*pdf(x, 0)) }
	xs := sigma*sigma*eps + 0.5 // p/q = exp((2x−1)/(2σ²)) crosses e^ε here
	s := 0.0
	for k := 0; k < 40; k++ { // [xs, xs + 40σ] in pieces of σ
		s += quad.Fixed(f, xs+float64(k)*sigma, xs+float64(k+1)*sigma, 64, nil, 0)
	}
	return s
}

func TestExactAgainstIntegration(t *testing.T) {
	// Oracle: numerical integration of the privacy-loss tail. Relative tolerance 1e-8.
	const rtol = 1e-8
	for _, sigma := range []float64{0.5, 1, 2.23048, 4.22468} {
		for _, eps := range []float64{0.1, 1, 3, 8} {
			a := NewExact()
			if err := a.Compose(Gaussian{sigma}, 1); err != nil {
				t.Fatal(err)
			}
			got, _ := a.Delta(eps)
			want := gaussianDeltaByIntegration(sigma, eps)
			if want < 1e-300 {
				continue
			}
			if math.Abs(got-want) > rtol*want {
				t.Errorf("σ = %g, ε = %g: δ = %.12g, integration %.12g", sigma, eps, got, want)
			}
			// Negative control: the oracle separates a 1 % change of σ.
			if wrong := gaussianDeltaByIntegration(sigma*1.01, eps); math.Abs(got-wrong) <= rtol*want {
				t.Errorf("σ = %g, ε = %g: oracle cannot tell σ from 1.01σ", sigma, eps)
			}
		}
	}
}

func TestExactEpsilonDeltaInverse(t *testing.T) {
	for _, sigma := range []float64{0.2, 1, 7} {
		for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
			a := NewExact()
			_ = a.Compose(Gaussian{sigma}, 3)
			g, err := a.Epsilon(delta)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := a.Delta(g.Epsilon)
			if math.Abs(d-delta) > 1e-8*delta {
				t.Errorf("σ = %g: Delta(Epsilon(%g)) = %g", sigma, delta, d)
			}
		}
	}
}

func TestExactLargeEpsilon(t *testing.T) {
	// σ = 0.05 (μ = 20): ε is large; δ(ε) must stay finite and decreasing.
	a := NewExact()
	_ = a.Compose(Gaussian{0.05}, 1)
	g, err := a.Epsilon(1e-6)
	if err != nil || math.IsNaN(g.Epsilon) || g.Epsilon < 100 {
		t.Fatalf("ε = %v, err %v; want a large finite ε", g.Epsilon, err)
	}
	prev := 1.0
	for eps := 0.0; eps < 500; eps += 10 {
		d, _ := a.Delta(eps)
		if math.IsNaN(d) || d > prev {
			t.Fatalf("δ(%g) = %g after %g", eps, d, prev)
		}
		prev = d
	}
}

func TestExactRefuses(t *testing.T) {
	for _, e := range []Event{
		PoissonSampled{0.5, Gaussian{1}},
		PureDP{1},
		Composed{[]Event{Gaussian{1}, PoissonSampled{0.01, Gaussian{1}}}},
		Gaussian{0},
		Gaussian{-1},
		Gaussian{math.NaN()},
		nil,
		SelfComposed{Gaussian{1}, -1},
		PoissonSampled{1.5, Gaussian{1}},
	} {
		a := NewExact().(*Exact)
		_ = a.Compose(Gaussian{2}, 1)
		before := a.Mu()
		err := a.Compose(e, 1)
		if err == nil || !strings.HasPrefix(err.Error(), "privacy: ") {
			t.Errorf("Compose(%v) error = %v, want a privacy: error", e, err)
		}
		if a.Mu() != before {
			t.Errorf("Compose(%v) changed the accountant despite failing", e)
		}
	}
	// q = 1 and q = 0 are not sampling.
	a := NewExact()
	if err := a.Compose(PoissonSampled{1, Gaussian{1}}, 1); err != nil {
		t.Error(err)
	}
	if err := a.Compose(PoissonSampled{0, Gaussian{0.001}}, 1); err != nil {
		t.Error(err)
	}
	g, _ := a.Epsilon(1e-6)
	if math.Abs(g.Epsilon-4.8866) > 6e-5 {
		t.Errorf("q=1 and q=0 events: ε = %g, want 4.8866", g.Epsilon)
	}
	if _, err := a.Epsilon(0); err == nil {
		t.Error("Epsilon(0) with mu > 0 should fail")
	}
	if _, err := a.Epsilon(-1); err == nil {
		t.Error("Epsilon(-1) should fail")
	}
	if _, err := a.Delta(-1); err == nil {
		t.Error("Delta(-1) should fail")
	}
	if g, err := NewExact().Epsilon(1e-9); err != nil || g.Epsilon != 0 {
		t.Errorf("empty accountant: %v, %v; want ε = 0", g, err)
	}
}
