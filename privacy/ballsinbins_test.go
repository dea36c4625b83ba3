package privacy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// toeplitzModes is the oracle's m_s = C·1[t ≡ s mod b] for the banded
// Toeplitz C whose first column starts with col, built directly from
// y = C·x (no use of BallsInBins.Modes).
func toeplitzModes(col []float64, bins, n int) [][]float64 {
	modes := make([][]float64, bins)
	for s := range modes {
		modes[s] = make([]float64, n)
		for j := s; j < n; j += bins {
			for k, c := range col {
				if j+k < n {
					modes[s][j+k] += c
				}
			}
		}
	}
	return modes
}

func toeplitzEntry(col []float64) func(i, j int) float64 {
	return func(i, j int) float64 {
		if i-j < len(col) {
			return col[i-j]
		}
		return 0
	}
}

// TestBallsInBinsLossReference checks the privacy loss of given outputs
// against jax_privacy's sample_generation test vectors (two bins, four
// rounds, σ = 1, banded Toeplitz C given by its first column).
func TestBallsInBinsLossReference(t *testing.T) {
	for _, c := range []struct {
		y, col []float64
		want   float64
	}{
		{[]float64{1, 0, 1, 0}, []float64{1, 0}, 0.4337808304830272},
		{[]float64{1, 0.5, 1, 0.5}, []float64{1, 0.5}, 0.9052974004451105},
		{[]float64{1, 1, 1, 1}, []float64{1, 1, 0.5, 0.5}, 1.5799760835798948},
	} {
		got := BallsInBinsLoss(c.y, toeplitzModes(c.col, 2, 4), 1)
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("loss(y=%v, c=%v) = %.12g, want %.12g", c.y, c.col, got, c.want)
		}
	}
	// Modes built from C's entries agree with the oracle's.
	m := BallsInBins{Bins: 2, Rounds: 4, NoiseMultiplier: 1, Entry: toeplitzEntry([]float64{1, 0.5}), Bands: 2}
	modes, err := m.Modes()
	if err != nil {
		t.Fatal(err)
	}
	want := toeplitzModes([]float64{1, 0.5}, 2, 4)
	for s := range modes {
		for i := range modes[s] {
			if modes[s][i] != want[s][i] {
				t.Fatalf("mode %d = %v, want %v", s, modes[s], want[s])
			}
		}
	}
}

// TestBallsInBinsLowNoiseSamples: at σ = 1e-4 (jax_privacy's low-noise
// test) a sample of P sits at one of the two modes, whose losses are
// ‖m_s‖²/(2σ²) − log 2 (1.25e8 and 1.125e8), each about half the time; a
// sample of Q has loss −(‖m_1‖²/(2σ²)) − log 2, negated 1.125e8.
func TestBallsInBinsLowNoiseSamples(t *testing.T) {
	m := BallsInBins{Bins: 2, Rounds: 4, NoiseMultiplier: 1e-4, Entry: toeplitzEntry([]float64{1, 0.5}), Bands: 2}
	pos, neg, err := BallsInBinsLosses(m, 10000, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	first := 0
	for _, l := range pos {
		switch {
		case math.Abs(l-1.25e8) < 1e5:
			first++
		case math.Abs(l-1.125e8) < 1e5:
		default:
			t.Fatalf("positive loss %g is at neither mode", l)
		}
	}
	if first < 4700 || first > 5300 { // 6 standard deviations
		t.Errorf("%d of 10000 samples at the first mode, want about half", first)
	}
	for _, l := range neg {
		if math.Abs(l-1.125e8) > 1e5 {
			t.Fatalf("negative-side loss %g, want about 1.125e8", l)
		}
	}
}

// oracleDelta2D integrates δ(ε) = max(∫(p − e^ε q)₊, ∫(q − e^ε p)₊) on a
// grid for two bins, one round each, C = I: p = ½N(e₁, σ²I) + ½N(e₂, σ²I),
// q = N(0, σ²I).
func oracleDelta2D(sigma, eps float64) float64 {
	const h = 0.02
	var dp, dq float64
	norm := func(x float64) float64 { return math.Exp(-x*x/(2*sigma*sigma)) / (sigma * math.Sqrt(2*math.Pi)) }
	for x := -9 * sigma; x <= 1+9*sigma; x += h {
		for y := -9 * sigma; y <= 1+9*sigma; y += h {
			q := norm(x) * norm(y)
			p := 0.5*norm(x-1)*norm(y) + 0.5*norm(x)*norm(y-1)
			dp += max(0, p-math.Exp(eps)*q)
			dq += max(0, q-math.Exp(eps)*p)
		}
	}
	return max(dp, dq) * h * h
}

// TestBallsInBinsOracle compares the Monte Carlo guarantee with numerical
// integration of the exact pair in the smallest case: the bound at the
// reported ε covers the integrated δ, and the reported ε is at least the
// exact one and close to it.
func TestBallsInBinsOracle(t *testing.T) {
	const sigma, delta = 1.0, 1e-2
	m := BallsInBins{Bins: 2, Rounds: 2, NoiseMultiplier: sigma, Entry: toeplitzEntry([]float64{1}), Bands: 1}
	mc := MonteCarlo{Samples: 200_000, Confidence: 0.99}
	g, err := BallsInBinsEpsilon(m, delta, mc, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g.String(), "monte-carlo, 99% confidence; zero-out") {
		t.Errorf("label %q does not state the method, confidence and adjacency", g)
	}
	// The exact ε at δ by bisection on the integrated curve.
	lo, hi := 0.0, 5.0
	for hi-lo > 1e-4 {
		if mid := (lo + hi) / 2; oracleDelta2D(sigma, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	exact := (lo + hi) / 2
	t.Logf("Monte Carlo %v; integrated exact ε = %.5g", g, exact)
	if g.Epsilon < exact-1e-3 || g.Epsilon > exact*1.08 {
		t.Errorf("Monte Carlo ε = %.5g, integrated exact ε = %.5g: want at least it and within 8%%", g.Epsilon, exact)
	}
	if d := oracleDelta2D(sigma, g.Epsilon); d > delta*1.001 {
		t.Errorf("integrated δ(%.5g) = %.5g exceeds the certified δ = %g", g.Epsilon, d, delta)
	}
}

// TestBallsInBinsOneBinIsNotAmplified is the negative control: with one bin
// every record takes part in every round, the pair is a plain Gaussian with
// μ = ‖C·1‖/σ, and the Monte Carlo ε matches the analytic Gaussian's from
// above; with four bins (the same C) it is smaller than the unamplified ε of
// the same schedule (a client in every fourth round, no sampling).
func TestBallsInBinsOneBinIsNotAmplified(t *testing.T) {
	const delta = 1e-3
	mc := MonteCarlo{Samples: 100_000, Confidence: 0.99}
	one := BallsInBins{Bins: 1, Rounds: 8, NoiseMultiplier: 3, Entry: toeplitzEntry([]float64{1}), Bands: 1}
	g, err := BallsInBinsEpsilon(one, delta, mc, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	exact := gaussianEpsilon(t, math.Sqrt(8)/3, delta)
	if g.Epsilon < exact-1e-3 || g.Epsilon > exact*1.08 {
		t.Errorf("one bin: Monte Carlo ε = %.5g, analytic Gaussian ε = %.5g", g.Epsilon, exact)
	}
	four := BallsInBins{Bins: 4, Rounds: 8, NoiseMultiplier: 1, Entry: toeplitzEntry([]float64{1, 0.5}), Bands: 2}
	g4, err := BallsInBinsEpsilon(four, delta, mc, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	modes, _ := four.Modes()
	var worst float64
	for _, v := range modes {
		var sq float64
		for _, x := range v {
			sq += x * x
		}
		worst = max(worst, math.Sqrt(sq))
	}
	if un := gaussianEpsilon(t, worst, delta); !(g4.Epsilon < un) {
		t.Errorf("four bins: amplified ε = %.5g is not below the unamplified %.5g", g4.Epsilon, un)
	}
}

func gaussianEpsilon(t *testing.T, mu, delta float64) float64 {
	t.Helper()
	a := NewExact()
	if err := a.Compose(Gaussian{NoiseMultiplier: 1 / mu}, 1); err != nil {
		t.Fatal(err)
	}
	g, err := a.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return g.Epsilon
}

// TestBallsInBinsRefuses: what the dominating pair does not cover is
// refused with the reason, and so are too few samples for the δ.
func TestBallsInBinsRefuses(t *testing.T) {
	ok := BallsInBins{Bins: 2, Rounds: 4, NoiseMultiplier: 1, Entry: toeplitzEntry([]float64{1, 0.5}), Bands: 2}
	for _, c := range []struct {
		m    BallsInBins
		mc   MonteCarlo
		want string
	}{
		{BallsInBins{Bins: 2, Rounds: 4, NoiseMultiplier: 1, Entry: toeplitzEntry([]float64{1, 0.5, 0.2}), Bands: 3}, MonteCarlo{1000, 0.9}, "at most b bands"},
		{BallsInBins{Bins: 2, Rounds: 4, NoiseMultiplier: 1, Entry: toeplitzEntry([]float64{1, -0.5}), Bands: 2}, MonteCarlo{1000, 0.9}, "non-negative"},
		{BallsInBins{Bins: 4, Rounds: 2, NoiseMultiplier: 1, Entry: toeplitzEntry([]float64{1}), Bands: 1}, MonteCarlo{1000, 0.9}, "rounds >= bins"},
		{ok, MonteCarlo{10, 0.99}, "cannot certify"},
		{ok, MonteCarlo{1000, 1}, "confidence"},
	} {
		_, err := BallsInBinsEpsilon(c.m, 0.1, c.mc, rand.New(rand.NewPCG(1, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.mc, err, c.want)
		}
	}
}
