package privacy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func gaussianFactory(sigma float64) Event { return Gaussian{sigma} }

func TestCalibrateExactBMF23Table4(t *testing.T) {
	// Choquette-Choo et al. 2023 Table 4: the DP-SGD noise multipliers for ε = 1, 2, 4,
	// 8, 16 at δ = 1e-6 are exact calibrations of one Gaussian. The table has 5
	// decimals: tolerance 6e-6 absolute (half a unit in the last place plus
	// the bisection's relative tolerance 1e-8).
	want := map[float64]float64{1: 4.22468, 2: 2.23048, 4: 1.19352, 8: 0.65294, 16: 0.36861}
	for eps, sigma := range want {
		s, g, err := Calibrate(eps, 1e-6, gaussianFactory, NewExact, 1e-8)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(s-sigma) > 6e-6 {
			t.Errorf("ε = %g: σ = %.7f, want %.5f", eps, s, sigma)
		}
		if g.Epsilon > eps || g.Epsilon < eps-1e-6 || g.Method != MethodExactGDP || g.Delta != 1e-6 {
			t.Errorf("ε = %g: achieved %v", eps, g)
		}
	}
}

func TestCalibrateRoundTrip(t *testing.T) {
	// For each accountant: calibrate, then check the accountant at σ meets the
	// target and at σ/(1+2 relTol) does not (the answer is the smallest σ up to relTol).
	const relTol = 1e-6
	sampled := func(s float64) Event { return SelfComposed{PoissonSampled{0.01, Gaussian{s}}, 500} }
	cases := []struct {
		name    string
		factory func(float64) Event
		acct    func() Accountant
	}{
		{"exact", func(s float64) Event { return SelfComposed{Gaussian{s}, 100} }, NewExact},
		{"zcdp", gaussianFactory, func() Accountant { return NewZCDP(ZCDPStandard) }},
		{"zcdp-cks", gaussianFactory, func() Accountant { return NewZCDP(ZCDPCKS) }},
		{"rdp-cks", sampled, func() Accountant { return NewRDP(nil, CKS) }},
		{"rdp-mironov", sampled, func() Accountant { return NewRDP(nil, Mironov) }},
	}
	for _, c := range cases {
		for _, eps := range []float64{0.5, 2, 10} {
			s, g, err := Calibrate(eps, 1e-5, c.factory, c.acct, relTol)
			if err != nil {
				t.Fatalf("%s ε = %g: %v", c.name, eps, err)
			}
			at := func(sigma float64) float64 {
				a := c.acct()
				if err := a.Compose(c.factory(sigma), 1); err != nil {
					t.Fatal(err)
				}
				g, err := a.Epsilon(1e-5)
				if err != nil {
					t.Fatal(err)
				}
				return g.Epsilon
			}
			if e := at(s); e > eps || e != g.Epsilon {
				t.Errorf("%s: σ = %g gives ε = %g (reported %g), target %g", c.name, s, e, g.Epsilon, eps)
			}
			if e := at(s / (1 + 2*relTol)); e <= eps {
				t.Errorf("%s: smaller σ = %g also meets ε = %g (ε = %g)", c.name, s/(1+2*relTol), eps, e)
			}
		}
	}
}

func TestCalibrateUnreachable(t *testing.T) {
	// ε so small that even σ = 1e6 fails (10^12 composed Gaussians).
	f := func(s float64) Event { return SelfComposed{Gaussian{s}, 1_000_000_000_000} }
	_, _, err := Calibrate(1e-9, 1e-6, f, NewExact, 1e-6)
	if err == nil || !strings.Contains(err.Error(), "ε = 1e-09 at δ = 1e-06") || !strings.HasPrefix(err.Error(), "privacy: ") {
		t.Errorf("unreachable ε: error %v", err)
	}
	// δ = 0: the exact accountant cannot certify anything.
	_, _, err = Calibrate(1, 0, gaussianFactory, NewExact, 1e-6)
	if err == nil || !strings.Contains(err.Error(), "ε = 1 at δ = 0") {
		t.Errorf("δ = 0: error %v", err)
	}
	// The accountant cannot account the event at all.
	_, _, err = Calibrate(1, 1e-6, func(s float64) Event { return PoissonSampled{0.1, Gaussian{s}} }, NewExact, 1e-6)
	if err == nil || !strings.Contains(err.Error(), "cannot account") {
		t.Errorf("unsupported event: error %v", err)
	}
	for _, tol := range []float64{0, -1, 1, math.NaN()} {
		if _, _, err := Calibrate(1, 1e-6, gaussianFactory, NewExact, tol); err == nil {
			t.Errorf("relTol %g accepted", tol)
		}
	}
}

func TestCalibrateNoiseNotNeeded(t *testing.T) {
	// An event whose privacy does not depend on σ and already meets the target:
	// the smallest σ of the search range is returned.
	// PureDP{0.5} is 0.125-zCDP: ε = 2.753 at δ = 1e-6 by Lemma 3.8.
	s, g, err := Calibrate(3, 1e-6, func(float64) Event { return PureDP{0.5} }, func() Accountant { return NewZCDP(ZCDPStandard) }, 1e-6)
	if err != nil || s != 1e-6 || math.Abs(g.Epsilon-2.753) > 1e-3 {
		t.Errorf("σ = %g, %v, %v", s, g, err)
	}
}

// BenchmarkCalibrateSampledGaussian2000 calibrates σ for 2,000 rounds of a
// Poisson-sampled Gaussian (q = 0.01, ε = 2, δ = 1e-6, relative tolerance
// 1e-6, the tolerance dpfl runs use) with each accountant that amplifies by
// sampling: RDP with CKS over DefaultOrders, and the PLD at its default grid.
func BenchmarkCalibrateSampledGaussian2000(b *testing.B) {
	f := func(s float64) Event { return SelfComposed{PoissonSampled{0.01, Gaussian{s}}, 2000} }
	for _, name := range []string{"rdp", "pld"} {
		acct, err := NewByName(name, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Calibrate(2, 1e-6, f, acct, 1e-6); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestCalibratePLDPilot(t *testing.T) {
	// The PLD pilot (a coarse PLD) only chooses where the search starts:
	// the answer must be the same threshold as calibrating without it, up to
	// the tolerance, and the round trip must hold (meets at σ, fails at
	// σ/(1+2·relTol)).
	const relTol = 1e-6
	f := func(s float64) Event { return SelfComposed{PoissonSampled{0.05, Gaussian{s}}, 300} }
	s, g, err := Calibrate(3, 1e-6, f, func() Accountant { return NewPLD(PLDConfig{}) }, relTol)
	if err != nil {
		t.Fatal(err)
	}
	// The same accountant with the pilot hidden.
	type plain struct{ Accountant }
	s2, _, err := Calibrate(3, 1e-6, f, func() Accountant { return plain{NewPLD(PLDConfig{})} }, relTol)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s/s2-1) > 2*relTol || g.Epsilon > 3 || g.Method != MethodPLD {
		t.Errorf("piloted σ = %.9g (%v), plain σ = %.9g", s, g, s2)
	}
	at := func(sigma float64) float64 {
		a := NewPLD(PLDConfig{})
		_ = a.Compose(f(sigma), 1)
		g, err := a.Epsilon(1e-6)
		if err != nil {
			t.Fatal(err)
		}
		return g.Epsilon
	}
	if at(s) > 3 || at(s/(1+2*relTol)) <= 3 {
		t.Errorf("σ = %g is not the threshold: ε(σ) = %g, ε(σ/(1+2tol)) = %g", s, at(s), at(s/(1+2*relTol)))
	}
}

// within runs f and fails the test if it used more than limit of CPU time
// (of wall time where cpuTime does not read it), and ends the test if f has
// not returned within 10 limits of wall time (a search that never ends
// fails instead of hanging the test binary). CPU time, not wall time, so
// that a loaded machine does not fail the bound; the privacy tests that
// call it are not parallel, so the process's CPU time is f's.
func within(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	c0, cpu := cpuTime()
	go func() { defer close(done); f() }()
	select {
	case <-done:
		d, of := time.Since(start), "wall time"
		if c1, ok := cpuTime(); cpu && ok {
			d, of = c1-c0, "CPU time"
		}
		if d > limit {
			t.Errorf("%s took %v of %s (limit %v)", what, d, of, limit)
		}
	case <-time.After(10 * limit):
		t.Fatalf("%s did not return within %v (10 times its limit of %v)", what, 10*limit, limit)
	}
}

// TestCalibrateFloatResolution: at relTol = 1e-15 and σ in the thousands,
// adjacent float64 values of ln σ are farther apart than log1p(relTol), so
// a search that only stops at that width never ends. The answer meets the
// target, is within 1e-6 of the relTol = 1e-6 answer, and no σ a few float
// steps below it meets it (bisection on σ itself finished the search).
func TestCalibrateFloatResolution(t *testing.T) {
	for _, eps := range []float64{0.001, 1e-5} {
		var s, s6 float64
		var g Guarantee
		var err error
		within(t, 2*time.Second, fmt.Sprintf("exact calibration for ε = %g, δ = 1e-10, tol 1e-15", eps), func() {
			s, g, err = Calibrate(eps, 1e-10, gaussianFactory, NewExact, 1e-15)
		})
		if err != nil {
			t.Fatal(err)
		}
		if s6, _, err = Calibrate(eps, 1e-10, gaussianFactory, NewExact, 1e-6); err != nil {
			t.Fatal(err)
		}
		if g.Epsilon > eps || math.Abs(s/s6-1) > 1e-6 || s < 2981 {
			t.Errorf("ε = %g: σ = %.17g (%v), at tol 1e-6 σ = %.17g", eps, s, g, s6)
		}
		a := NewExact()
		_ = a.Compose(Gaussian{s * (1 - 1e-14)}, 1)
		if lower, _ := a.Epsilon(1e-10); lower.Epsilon <= eps {
			t.Errorf("ε = %g: σ(1 − 1e-14) = %.17g also meets it (%v)", eps, s*(1-1e-14), lower)
		}
	}
}

// TestCalibrateToleranceFloor: a tolerance below float64's resolution is
// refused at once, naming it; the smallest accepted one terminates.
func TestCalibrateToleranceFloor(t *testing.T) {
	for _, acct := range []func() Accountant{NewExact, func() Accountant { return NewPLD(PLDConfig{}) }} {
		within(t, 2*time.Second, "calibration at tol 1e-300", func() {
			_, _, err := Calibrate(1, 1e-6, gaussianFactory, acct, 1e-300)
			if err == nil || !strings.Contains(err.Error(), "tolerance") {
				t.Errorf("tol 1e-300: %v", err)
			}
		})
	}
	within(t, 2*time.Second, "calibration at the smallest tolerance", func() {
		if _, _, err := Calibrate(1, 1e-6, gaussianFactory, NewExact, MinCalibrateTolerance); err != nil {
			t.Error(err)
		}
	})
}

// TestCalibrateEvaluationCap: the iteration cap ends a search with an
// error naming the target (lowered here so that an ordinary search hits it).
func TestCalibrateEvaluationCap(t *testing.T) {
	defer func(n int) { calibrateMaxEvals = n }(calibrateMaxEvals)
	calibrateMaxEvals = 5
	_, _, err := Calibrate(1, 1e-6, gaussianFactory, NewExact, 1e-12)
	if err == nil || !strings.Contains(err.Error(), "no convergence in 5") || !strings.Contains(err.Error(), "ε = 1 at δ = 1e-06") {
		t.Errorf("capped search: %v", err)
	}
}

// TestCalibrateContextCanceled: a calibration stops within a fraction of a
// second of its context's cancellation, also inside a long PLD evaluation,
// with an error wrapping context.Canceled.
func TestCalibrateContextCanceled(t *testing.T) {
	f := func(s float64) Event { return SelfComposed{PoissonSampled{0.01, Gaussian{s}}, 100_000} }
	pld := func() Accountant { return NewPLD(PLDConfig{Discretization: 1e-4}) }
	for _, wait := range []time.Duration{0, 50 * time.Millisecond, 300 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _, err = CalibrateContext(ctx, 1, 1e-6, f, pld, 1e-6)
		}()
		time.Sleep(wait)
		cancel()
		start := time.Now()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("canceled after %v: still running 2 s later", wait)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("canceled after %v: returned %v later", wait, d)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("canceled after %v: error %v", wait, err)
		}
	}
}
