package experiments

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"dpfl/aggregators"
	"dpfl/privacy"
)

// signSGD is a server optimizer registered by this test file: θ ← θ − lr ·
// sign(u), with no state.
type signSGD struct{ lr float64 }

// signSteps counts the steps of every signSGD.
var signSteps atomic.Int64

func (s *signSGD) Step(theta, u []float32, t int) {
	signSteps.Add(1)
	for i, x := range u {
		switch {
		case x > 0:
			theta[i] -= float32(s.lr)
		case x < 0:
			theta[i] += float32(s.lr)
		}
	}
}

func (s *signSGD) Validate() error {
	if !(s.lr > 0) {
		return fmt.Errorf("signsgd: lr %v must be positive", s.lr)
	}
	return nil
}

func (s *signSGD) State() []float64 { return nil }

func (s *signSGD) SetState(st []float64, d int) error {
	if len(st) != 0 {
		return fmt.Errorf("signsgd keeps no state, got %d values", len(st))
	}
	return nil
}

// testGDP is an accountant registered by this test file: the exact (GDP)
// accountant under its own method name.
type testGDP struct{ privacy.Accountant }

func (a testGDP) Epsilon(delta float64) (privacy.Guarantee, error) {
	g, err := a.Accountant.Epsilon(delta)
	g.Method = "test-gdp"
	return g, err
}

func init() {
	aggregators.RegisterServerOptimizer(aggregators.ServerOptimizerKind{
		Name: "signsgd-test",
		Validate: func(p aggregators.ServerParams, problem aggregators.Problems) {
			if p.Momentum != 0 {
				problem("momentum", "signsgd-test has no momentum")
			}
		},
		New: func(p aggregators.ServerParams, _ aggregators.LRSchedule) aggregators.ServerOptimizer {
			return &signSGD{lr: p.LR}
		},
	})
	privacy.RegisterAccountant(privacy.AccountantKind{Name: "test-gdp",
		New: func(privacy.AccountantOptions) privacy.Accountant { return testGDP{privacy.NewExact()} }})
}

// TestRegisteredKinds: a server optimizer and an accountant registered from
// a test file are chosen by name in a configuration, validated, and used:
// two rounds train with the optimizer (one step per round), and the noise is calibrated and reported by the
// accountant.
func TestRegisteredKinds(t *testing.T) {
	yml := strings.NewReplacer("rounds: 5", "rounds: 2", "  noise_multiplier: 0\n", "",
		"server:\n  lr: 1\n", "privacy:\n  epsilon: 4\n  delta: 1.0e-3\n  accountant: test-gdp\nserver:\n  optimizer: signsgd-test\n  lr: 0.01\n").Replace(validYAML)
	cfg, _, err := Load([]byte(yml), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.serverOptimizer().(*signSGD); !ok {
		t.Fatalf("built %T", cfg.serverOptimizer())
	}
	steps := signSteps.Load()
	res, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Epsilon == nil || *s.Epsilon > 4 || *s.Epsilon < 4*(1-1e-4) || s.EpsilonMethod != "test-gdp" {
		t.Errorf("epsilon %v by %q, want 4 by test-gdp", s.Epsilon, s.EpsilonMethod)
	}
	if n := signSteps.Load() - steps; n != 2 {
		t.Errorf("the optimizer took %d steps, want 2 (one per round)", n)
	}

	// Their validation and capabilities apply: the optimizer's own
	// problems, and the accountant's refusal of Poisson sampling.
	for _, c := range []struct{ old, repl, want string }{
		{"  lr: 0.01\n", "  lr: 0.01\n  momentum: 0.5\n", "server.momentum: signsgd-test has no momentum"},
		{"  lr: 0.01\n", "  lr: 0.01\n  beta1: 0.5\n", "server.beta1"},
		{"  cohort: 10\n", "  kind: poisson\n  q: 0.1\n", "privacy.accountant: test-gdp cannot account Poisson sampling"},
	} {
		bad := strings.Replace(yml, c.old, c.repl, 1)
		if _, _, err := Load([]byte(bad), "c.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.repl, err, c.want)
		}
	}
}
