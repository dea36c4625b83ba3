package aggregators

import (
	"fmt"
	"math"
)

// ServerOptimizer applies round t's privatized update u to the global model
// theta. Every implementation is post-processing of the privatized updates:
// it never changes the privacy accounting.
type ServerOptimizer interface {
	// Step updates theta in place with the update u of round t (0-based).
	// u points downhill the way a gradient does: plain SGD is θ ← θ − η u.
	Step(theta, u []float32, t int)
	// Validate reports bad hyperparameters.
	Validate() error
	// State returns the optimizer's buffers packed in one slice (nil before
	// the first step, or when it keeps none), for checkpoints. It is the
	// live state or a fresh copy: copy it before the next Step if it must be
	// kept.
	State() []float64
	// SetState restores a state returned by State for a model of d
	// parameters (nil or empty: the initial state).
	SetState(s []float64, d int) error
}

// State returns the momentum buffer (see MomentumState).
func (s *ServerSGD) State() []float64 { return s.MomentumState() }

// SetState restores the momentum buffer of a model of d parameters.
func (s *ServerSGD) SetState(m []float64, d int) error {
	if len(m) != 0 && len(m) != d {
		return fmt.Errorf("aggregators: server sgd state of %d values for %d parameters", len(m), d)
	}
	s.SetMomentumState(m)
	return nil
}

// AdaptiveRule is the second-moment update of an adaptive server optimizer.
type AdaptiveRule int

const (
	// Adam: v ← β₂ v + (1 − β₂) Δ².
	Adam AdaptiveRule = iota
	// Yogi: v ← v − (1 − β₂) Δ² sign(v − Δ²).
	Yogi
	// Adagrad: v ← v + Δ².
	Adagrad
)

// String returns "adam", "yogi" or "adagrad".
func (r AdaptiveRule) String() string {
	switch r {
	case Yogi:
		return "yogi"
	case Adagrad:
		return "adagrad"
	}
	return "adam"
}

func init() {
	for _, r := range []AdaptiveRule{Adam, Yogi, Adagrad} {
		keys := []string{"beta1", "beta2", "tau"}
		if r == Adagrad {
			keys = []string{"beta1", "tau"}
		}
		RegisterServerOptimizer(ServerOptimizerKind{Name: r.String(), Keys: keys,
			Defaults: r.defaults, Validate: r.validate, New: r.build})
	}
}

// defaults sets β₁ = 0.9, β₂ = 0.99 (not for Adagrad) and τ = 1e-3 when
// unset.
func (r AdaptiveRule) defaults(p *ServerParams) {
	if p.Beta1 == nil {
		b := 0.9
		p.Beta1 = &b
	}
	if p.Beta2 == nil && r != Adagrad {
		b := 0.99
		p.Beta2 = &b
	}
	if p.Tau == 0 {
		p.Tau = 1e-3
	}
}

// validate reports the problems of the keys of an adaptive optimizer.
func (r AdaptiveRule) validate(p ServerParams, problem Problems) {
	if p.Momentum != 0 {
		problem("momentum", "%s has no heavy-ball momentum: its momentum is server.beta1", r)
	}
	if b := p.Beta1; b != nil && !(*b >= 0 && *b < 1) {
		problem("beta1", "%v must be in [0, 1)", *b)
	}
	if b := p.Beta2; b != nil {
		if r == Adagrad {
			problem("beta2", "%s sums the squared updates: it has no beta2", r)
		} else if !(*b >= 0 && *b < 1) {
			problem("beta2", "%v must be in [0, 1)", *b)
		}
	}
	if !(p.Tau > 0) || math.IsInf(p.Tau, 0) {
		problem("tau", "%v must be a positive finite number", p.Tau)
	} else if t2 := p.Tau * p.Tau; t2 < 0x1p-1022 || math.IsInf(t2, 0) {
		// v starts at τ²: a square that underflows to 0 (or is subnormal)
		// or overflows turns the first steps into m/τ or 0.
		problem("tau", "%v is out of range: its square, the second moment's initial value, must be a normal float64 (want 1e-150 <= tau <= 1e150)", p.Tau)
	}
}

// build returns the ServerAdaptive of p.
func (r AdaptiveRule) build(p ServerParams, s LRSchedule) ServerOptimizer {
	a := &ServerAdaptive{Rule: r, LR: p.LR, Tau: p.Tau, Schedule: s}
	if p.Beta1 != nil {
		a.Beta1 = *p.Beta1
	}
	if p.Beta2 != nil {
		a.Beta2 = *p.Beta2
	}
	return a
}

// ServerAdaptive is FedAdam, FedYogi or FedAdagrad (Reddi et al. 2021,
// "Adaptive Federated Optimization", Algorithm 2), with the pseudo-gradient
// Δ_t = −u_t (the privatized mean update, negated: u points downhill):
//
//	m_t = β₁ m_{t−1} + (1 − β₁) Δ_t
//	v_t = β₂ v_{t−1} + (1 − β₂) Δ_t²            (adam)
//	v_t = v_{t−1} − (1 − β₂) Δ_t² sign(v_{t−1} − Δ_t²)   (yogi)
//	v_t = v_{t−1} + Δ_t²                        (adagrad)
//	x_{t+1} = x_t + η_t m_t / (√v_t + τ)
//
// with η_t = LR · Schedule.Factor(t), m_{−1} = 0 and v_{−1} = τ² (the
// smallest initial value the paper allows, v_{−1} ≥ τ²), coordinate-wise,
// without bias correction, as in the paper. Adagrad uses β₁ too (the
// paper's FedAdagrad has momentum β₁; β₁ = 0 is classic Adagrad) and
// ignores β₂. Arithmetic is in float64; theta is rounded to float32 once per
// step.
type ServerAdaptive struct {
	Rule     AdaptiveRule
	LR       float64
	Beta1    float64
	Beta2    float64
	Tau      float64
	Schedule LRSchedule
	m, v     []float64 // nil before the first step
}

// Validate reports a bad learning rate, β₁, β₂, τ or schedule.
func (s *ServerAdaptive) Validate() error {
	if !(s.LR > 0) || math.IsInf(s.LR, 0) {
		return fmt.Errorf("aggregators: server learning rate %v must be a positive finite number", s.LR)
	}
	if !(s.Beta1 >= 0 && s.Beta1 < 1) {
		return fmt.Errorf("aggregators: server beta1 %v must be in [0, 1)", s.Beta1)
	}
	if s.Rule != Adagrad && !(s.Beta2 >= 0 && s.Beta2 < 1) {
		return fmt.Errorf("aggregators: server beta2 %v must be in [0, 1)", s.Beta2)
	}
	if !(s.Tau > 0) || math.IsInf(s.Tau, 0) {
		return fmt.Errorf("aggregators: server tau %v must be a positive finite number", s.Tau)
	}
	return s.Schedule.Validate()
}

// Step updates theta in place with the update u of round t (0-based).
func (s *ServerAdaptive) Step(theta, u []float32, t int) {
	if len(theta) != len(u) {
		panic(fmt.Sprintf("aggregators: update of %d values for %d parameters", len(u), len(theta)))
	}
	if len(s.m) != len(theta) {
		s.m = make([]float64, len(theta))
		s.v = make([]float64, len(theta))
		for i := range s.v {
			s.v[i] = s.Tau * s.Tau
		}
	}
	lr := s.LR * s.Schedule.Factor(t)
	b1, b2 := s.Beta1, s.Beta2
	for i, x := range u {
		g := -float64(x) // Δ_t
		g2 := g * g
		s.m[i] = b1*s.m[i] + (1-b1)*g
		switch s.Rule {
		case Adam:
			s.v[i] = b2*s.v[i] + (1-b2)*g2
		case Yogi:
			d := s.v[i] - g2
			switch {
			case d > 0:
				s.v[i] -= (1 - b2) * g2
			case d < 0:
				s.v[i] += (1 - b2) * g2
			}
		case Adagrad:
			s.v[i] += g2
		}
		theta[i] = float32(float64(theta[i]) + lr*s.m[i]/(math.Sqrt(s.v[i])+s.Tau))
	}
}

// State returns m followed by v (nil before the first step), a fresh copy.
func (s *ServerAdaptive) State() []float64 {
	if s.m == nil {
		return nil
	}
	return append(append(make([]float64, 0, 2*len(s.m)), s.m...), s.v...)
}

// SetState restores m and v, saved by State, for a model of d parameters.
func (s *ServerAdaptive) SetState(st []float64, d int) error {
	if len(st) == 0 {
		s.m, s.v = nil, nil
		return nil
	}
	if len(st) != 2*d {
		return fmt.Errorf("aggregators: server %s state of %d values for %d parameters (want %d)", s.Rule, len(st), d, 2*d)
	}
	s.m = append([]float64(nil), st[:d]...)
	s.v = append([]float64(nil), st[d:]...)
	return nil
}
