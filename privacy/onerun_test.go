package privacy

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// deterministicNormal returns the (i+½)/n quantiles of N(mu, 1), i < n.
func deterministicNormal(mu float64, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		p := (float64(i) + 0.5) / float64(n)
		x[i] = mu + math.Sqrt2*math.Erfinv(2*p-1)
	}
	return x
}

// TestEpsilonOneRunReference checks the bound against jax_privacy's
// auditing test vectors: 10,000 inserted and 10,000 held-out canaries with
// normal scores shifted by 0, 1, 2 and 4, significance 0.05, δ = 1e-6
// (relative tolerance 1e-5, as theirs).
func TestEpsilonOneRunReference(t *testing.T) {
	for _, c := range []struct{ shift, want float64 }{{0, 0}, {1, 1.13346}, {2, 2.311945}, {4, 4.395568}} {
		r, err := EpsilonOneRun(deterministicNormal(c.shift, 10000), deterministicNormal(0, 10000), 0.95, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Epsilon-c.want) > 1e-5*math.Max(c.want, 1e-9) && !(c.want == 0 && r.Epsilon == 0) {
			t.Errorf("shift %g: ε lower bound %.7g, want %.7g (%+v)", c.shift, r.Epsilon, c.want, r)
		}
	}
}

// naivePValue is the p-value from log-gamma binomial terms and the
// definition of the δ-term as a maximum over i of (P[B ≥ v−i] − β)/i.
func naivePValue(m, r, v int, eps, delta float64) float64 {
	q := math.Exp(eps) / (1 + math.Exp(eps))
	pmf := func(k int) float64 {
		a, _ := math.Lgamma(float64(r + 1))
		b, _ := math.Lgamma(float64(k + 1))
		c, _ := math.Lgamma(float64(r - k + 1))
		return math.Exp(a - b - c + float64(k)*math.Log(q) + float64(r-k)*math.Log(1-q))
	}
	sf := func(v int) float64 {
		s := 0.0
		for k := max(v, 0); k <= r; k++ {
			s += pmf(k)
		}
		return s
	}
	beta := sf(v)
	alpha := 0.0
	for i := 1; i <= v; i++ {
		alpha = math.Max(alpha, (sf(v-i)-beta)/float64(i))
	}
	return math.Min(beta+alpha*delta*2*float64(m), 1)
}

// TestOneRunPValueOracle compares the p-value with the naive one over the
// grid of jax_privacy's test (m, guesses, wrong guesses, ε, δ).
func TestOneRunPValueOracle(t *testing.T) {
	for _, m := range []int{10, 100, 1000} {
		for _, g := range []int{1, 10, 100} {
			for _, wrong := range []int{0, 1, 10, 100} {
				if wrong > g || g > m {
					continue
				}
				for _, eps := range []float64{0, 0.5, 1} {
					for _, delta := range []float64{0, 1e-6, 1e-3, 1e-1, 1} {
						got, want := OneRunPValue(m, g, g-wrong, eps, delta), naivePValue(m, g, g-wrong, eps, delta)
						if math.Abs(got-want) > 1e-9 {
							t.Errorf("m=%d r=%d v=%d ε=%g δ=%g: %g, naive %g", m, g, g-wrong, eps, delta, got, want)
						}
					}
				}
			}
		}
	}
}

// TestEpsilonOneRunControls: a non-private run (inserted canaries always
// score above held-out ones) gives a bound that grows with the canaries; a
// run whose scores do not depend on insertion gives 0; a Gaussian
// mechanism's scores (shift μ = 1/σ) give bounds below its true ε at δ in
// every one of 20 seeds (confidence 0.95).
func TestEpsilonOneRunControls(t *testing.T) {
	prev := 0.0
	for _, n := range []int{10, 50, 250, 1000} {
		r, err := EpsilonOneRun(deterministicNormal(100, n), deterministicNormal(0, n), 0.95, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if !(r.Epsilon > prev) {
			t.Errorf("separated, %d canaries per side: bound %g not above %g for fewer", n, r.Epsilon, prev)
		}
		prev = r.Epsilon
	}
	r0, _ := EpsilonOneRun(deterministicNormal(0, 1000), deterministicNormal(0, 1000), 0.95, 1e-5)
	if r0.Epsilon > 0 || r0.Threshold != nil {
		t.Errorf("identical score distributions: bound %g (threshold %v), want 0 and none", r0.Epsilon, r0.Threshold)
	}
	if _, err := json.Marshal(r0); err != nil {
		t.Errorf("a bound of 0 does not encode: %v", err)
	}
	const mu, delta = 1.0, 1e-5
	truth := gaussianEpsilon(t, mu, delta)
	rnd := rand.New(rand.NewPCG(11, 12))
	for s := range 20 {
		in, out := make([]float64, 500), make([]float64, 500)
		for i := range in {
			in[i], out[i] = mu+rnd.NormFloat64(), rnd.NormFloat64()
		}
		r, err := EpsilonOneRun(in, out, 0.95, delta)
		if err != nil {
			t.Fatal(err)
		}
		if r.Epsilon > truth {
			t.Errorf("seed %d: bound %g above the mechanism's ε %g", s, r.Epsilon, truth)
		}
	}
	rnd = rand.New(rand.NewPCG(13, 14))
	weak := 0.0
	for range 5 {
		in, out := make([]float64, 500), make([]float64, 500)
		for i := range in {
			in[i], out[i] = 0.02+rnd.NormFloat64(), rnd.NormFloat64()
		}
		r, _ := EpsilonOneRun(in, out, 0.95, delta)
		weak = math.Max(weak, r.Epsilon)
	}
	if weak > 0.3 {
		t.Errorf("strongly private scores (μ = 0.02): bound %g, want near 0", weak)
	}
}
