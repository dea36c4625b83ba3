package aggregators

import (
	"fmt"
	"math"
)

// LRShape is the shape of a learning-rate schedule's warmup and cooldown.
type LRShape int

const (
	// ConstantLR keeps the learning rate fixed (no warmup, no cooldown).
	ConstantLR LRShape = iota
	// LinearLR ramps linearly.
	LinearLR
	// CosineLR ramps along half a cosine period.
	CosineLR
)

// String returns "constant", "linear" or "cosine".
func (s LRShape) String() string {
	switch s {
	case LinearLR:
		return "linear"
	case CosineLR:
		return "cosine"
	}
	return "constant"
}

// LRSchedule multiplies the server learning rate in round t (0-based) of a
// Rounds-round run by Factor(t): a warmup from 1/Warmup up to 1 over the first
// Warmup rounds, 1 in between, and a cooldown over the last Cooldown rounds
// down to Final in the last round (the "cooldown" of Denisov et al. 2022 §5; the
// strategy reference losses use it linear, Cooldown = 64 of 256, Final = 0.05). The zero value is the
// constant schedule.
type LRSchedule struct {
	Shape    LRShape
	Rounds   int
	Warmup   int     // rounds of warmup (0: none)
	Cooldown int     // rounds of cooldown (0: none)
	Final    float64 // factor of the last round when Cooldown > 0, in [0, 1]
}

// Validate reports a schedule that does not fit its rounds.
func (s LRSchedule) Validate() error {
	switch s.Shape {
	case ConstantLR:
		if s.Warmup != 0 || s.Cooldown != 0 {
			return fmt.Errorf("aggregators: a constant learning rate has no warmup or cooldown")
		}
		return nil
	case LinearLR, CosineLR:
	default:
		return fmt.Errorf("aggregators: unknown learning-rate shape %d", int(s.Shape))
	}
	if s.Warmup < 0 || s.Cooldown < 0 || s.Warmup > s.Rounds || s.Cooldown > s.Rounds-s.Warmup { // not Warmup+Cooldown: it overflows
		return fmt.Errorf("aggregators: warmup %d + cooldown %d rounds must be non-negative and fit in %d rounds", s.Warmup, s.Cooldown, s.Rounds)
	}
	if !(s.Final >= 0 && s.Final <= 1) {
		return fmt.Errorf("aggregators: final learning-rate fraction %v must be in [0, 1]", s.Final)
	}
	return nil
}

// ramp maps x in (0, 1] to the schedule's shape: 0 at x = 0, 1 at x = 1.
func (s LRSchedule) ramp(x float64) float64 {
	if s.Shape == CosineLR {
		return (1 - math.Cos(math.Pi*x)) / 2
	}
	return x
}

// Factor returns the learning-rate multiplier of round t.
func (s LRSchedule) Factor(t int) float64 {
	if s.Shape == ConstantLR {
		return 1
	}
	if t < s.Warmup {
		return s.ramp(float64(t+1) / float64(s.Warmup))
	}
	if start := s.Rounds - s.Cooldown; s.Cooldown > 0 && t >= start {
		// Round start−1 has factor 1, round Rounds−1 has Final.
		x := float64(t-start+1) / float64(s.Cooldown)
		return 1 - (1-s.Final)*s.ramp(min(x, 1))
	}
	return 1
}

// Factors returns Factor(t) for every round, or nil for the constant
// schedule (the η of strategy.Momentum, where nil means η ≡ 1).
func (s LRSchedule) Factors() []float64 {
	if s.Shape == ConstantLR {
		return nil
	}
	eta := make([]float64, s.Rounds)
	for t := range eta {
		eta[t] = s.Factor(t)
	}
	return eta
}

// ServerSGD applies the privatized update of round t with heavy-ball
// momentum: m ← β m + u, θ ← θ − η_t m with η_t = LR · Schedule.Factor(t)
// (β = 0 is plain SGD). It is post-processing.
type ServerSGD struct {
	LR       float64
	Momentum float64
	Schedule LRSchedule // zero value: constant LR
	mom      []float64
}

func init() {
	RegisterServerOptimizer(ServerOptimizerKind{
		Name: DefaultServerOptimizer, Keys: []string{"momentum"}, Linear: true,
		New: func(p ServerParams, s LRSchedule) ServerOptimizer {
			return &ServerSGD{LR: p.LR, Momentum: p.Momentum, Schedule: s}
		},
	})
}

// Validate reports a bad learning rate, momentum or schedule.
func (s *ServerSGD) Validate() error {
	if !(s.LR > 0) {
		return fmt.Errorf("aggregators: server learning rate %v must be positive", s.LR)
	}
	if s.Momentum < 0 || s.Momentum >= 1 {
		return fmt.Errorf("aggregators: server momentum %v must be in [0, 1)", s.Momentum)
	}
	return s.Schedule.Validate()
}

// Step updates theta in place with the update u of round t (0-based).
func (s *ServerSGD) Step(theta, u []float32, t int) {
	if len(theta) != len(u) {
		panic(fmt.Sprintf("aggregators: update of %d values for %d parameters", len(u), len(theta)))
	}
	lr := s.LR * s.Schedule.Factor(t)
	if s.Momentum == 0 {
		for i, x := range u {
			theta[i] -= float32(lr * float64(x))
		}
		return
	}
	if len(s.mom) != len(theta) {
		s.mom = make([]float64, len(theta))
	}
	for i, x := range u {
		s.mom[i] = s.Momentum*s.mom[i] + float64(x)
		theta[i] -= float32(lr * s.mom[i])
	}
}

// MomentumState returns the momentum buffer (nil before the first step and
// without momentum), for checkpoints. It is the live buffer: copy it before
// the next Step if it must be kept.
func (s *ServerSGD) MomentumState() []float64 { return s.mom }

// SetMomentumState restores a momentum buffer saved by MomentumState (for
// resuming from a checkpoint): the values are copied; nil or empty resets
// the momentum to zero.
func (s *ServerSGD) SetMomentumState(m []float64) {
	if len(m) == 0 {
		s.mom = nil
		return
	}
	s.mom = append(s.mom[:0:0], m...)
}
