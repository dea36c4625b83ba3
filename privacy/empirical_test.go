package privacy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The two-normal epsilon with equal variances is the Gaussian mechanism's:
// N(0, 1) against N(mu, 1) is mu-GDP, whose epsilon the exact accountant
// computes in closed form.
func TestEpsilonTwoNormalsEqualVariance(t *testing.T) {
	for _, mu := range []float64{0.25, 0.5, 1, 2, 4, 8} {
		for _, delta := range []float64{1e-3, 1e-5, 1e-8} {
			acct := NewExact()
			if err := acct.Compose(Gaussian{NoiseMultiplier: 1 / mu}, 1); err != nil {
				t.Fatal(err)
			}
			g, err := acct.Epsilon(delta)
			if err != nil {
				t.Fatal(err)
			}
			// Scale and shift do not matter.
			got := EpsilonTwoNormals(Normal{Mean: 0.3, Std: 0.01}, Normal{Mean: 0.3 + 0.01*mu, Std: 0.01}, delta)
			if math.Abs(got-g.Epsilon) > 1e-6*math.Max(1, g.Epsilon) {
				t.Errorf("mu %g delta %g: two normals give epsilon %.9g, GDP %.9g", mu, delta, got, g.Epsilon)
			}
		}
	}
}

// With unequal variances, the closed-form hockey-stick divergence matches a
// numerical integral of (p - e^eps q)+ on a fine grid (tolerance 1e-7
// absolute, the grid's error).
func TestDeltaTwoNormalsOracle(t *testing.T) {
	cases := []struct{ p, q Normal }{
		{Normal{0, 1}, Normal{1, 1.3}},
		{Normal{0, 1}, Normal{2, 0.6}},
		{Normal{0.1, 0.02}, Normal{0.1, 0.03}},
		{Normal{0, 1}, Normal{-1, 2}},
	}
	for _, c := range cases {
		for _, eps := range []float64{0, 0.5, 1, 3} {
			lo := math.Min(c.p.Mean-12*c.p.Std, c.q.Mean-12*c.q.Std)
			hi := math.Max(c.p.Mean+12*c.p.Std, c.q.Mean+12*c.q.Std)
			const n = 400000
			h := (hi - lo) / n
			pdf := func(m Normal, x float64) float64 {
				z := (x - m.Mean) / m.Std
				return math.Exp(-z*z/2) / (m.Std * math.Sqrt(2*math.Pi))
			}
			var d1, d2 float64
			for i := 0; i < n; i++ {
				x := lo + (float64(i)+0.5)*h
				p, q := pdf(c.p, x), pdf(c.q, x)
				d1 += math.Max(0, p-math.Exp(eps)*q) * h
				d2 += math.Max(0, q-math.Exp(eps)*p) * h
			}
			want := math.Max(d1, d2)
			if got := DeltaTwoNormals(c.p, c.q, eps); math.Abs(got-want) > 1e-7 {
				t.Errorf("%v vs %v at eps %g: delta %.10g, integral %.10g", c.p, c.q, eps, got, want)
			}
		}
	}
}

func TestEpsilonTwoNormalsEdges(t *testing.T) {
	if e := EpsilonTwoNormals(Normal{0, 1}, Normal{0, 1}, 1e-5); e != 0 {
		t.Errorf("identical normals: epsilon %g, want 0", e)
	}
	if e := EpsilonTwoNormals(Normal{0, 1}, Normal{100, 1}, 1e-5); !math.IsInf(e, 1) { // GDP: about 5,000
		t.Errorf("normals 100 std apart: epsilon %g, want +Inf", e)
	}
	if e := EpsilonTwoNormals(Normal{0, 0}, Normal{1, 0}, 1e-5); !math.IsInf(e, 1) {
		t.Errorf("point masses apart: epsilon %g, want +Inf", e)
	}
	// Monotone in the separation.
	prev := 0.0
	for mu := 0.5; mu <= 6; mu += 0.5 {
		e := EpsilonTwoNormals(Normal{0, 1}, Normal{mu, 1}, 1e-5)
		if !(e > prev) {
			t.Errorf("epsilon at mu %g = %g, not above %g", mu, e, prev)
		}
		prev = e
	}
}

// The bootstrap interval of EstimateEpsilon covers the true epsilon of two
// normal samples at about its confidence: over 200 repetitions of 500
// held-out and 500 inserted draws from N(0,1) and N(1,1), a 90% interval
// must cover epsilon(mu = 1) at least 80% of the time (a binomial(200, 0.9)
// falls below 160 with probability about 1e-5), and its lower end may
// exceed the truth in at most 10% (nominal 5%; binomial(200, 0.05) exceeds
// 20 with probability about 1e-3). Negative control: samples with mu = 2
// give intervals that exclude epsilon(mu = 1) every time (their lower end
// is 6 standard errors above it).
func TestEstimateEpsilonCoverage(t *testing.T) {
	const delta = 1e-5
	truth := EpsilonTwoNormals(Normal{0, 1}, Normal{1, 1}, delta)
	reps, resamples := 200, 200
	if testing.Short() {
		reps = 40
	}
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(n int, m float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = m + rng.NormFloat64()
		}
		return xs
	}
	covered, above, excluded := 0, 0, 0
	var plugin, corrected []float64
	for r := 0; r < reps; r++ {
		e, err := EstimateEpsilon(draw(500, 0), draw(500, 1), delta, 0.9, resamples, rng)
		if err != nil {
			t.Fatal(err)
		}
		if e.Low <= truth && truth <= e.High {
			covered++
		}
		if e.Low > truth {
			above++
		}
		plugin, corrected = append(plugin, e.Separate), append(corrected, e.Epsilon)
		e2, err := EstimateEpsilon(draw(500, 0), draw(500, 2), delta, 0.9, resamples, rng)
		if err != nil {
			t.Fatal(err)
		}
		if e2.Low > truth {
			excluded++
		}
	}
	if float64(covered) < 0.8*float64(reps) {
		t.Errorf("90%% intervals covered the true epsilon %.3f in %d of %d repetitions", truth, covered, reps)
	}
	if float64(above) > 0.1*float64(reps) {
		t.Errorf("90%% intervals lay above the true epsilon %.3f in %d of %d repetitions", truth, above, reps)
	}
	// The separate fit's median is well above the truth (5.1 for 4.38), the
	// pooled one's within 0.3 of it.
	slices.Sort(plugin)
	slices.Sort(corrected)
	t.Logf("truth %.3f: covered %d/%d, lower end above %d/%d, median separate %.3f, pooled %.3f", truth, covered, reps, above, reps, plugin[reps/2], corrected[reps/2])
	if mp, mc := plugin[reps/2], corrected[reps/2]; !(mp > truth+0.3) || math.Abs(mc-truth) > 0.3 {
		t.Errorf("median separate-variance estimate %.3f, pooled %.3f, truth %.3f", mp, mc, truth)
	}
	if excluded != reps {
		t.Errorf("negative control: mu = 2 samples excluded epsilon(mu=1) = %.3f in only %d of %d repetitions", truth, excluded, reps)
	}
}
