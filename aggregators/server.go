package aggregators

import "fmt"

// ServerSGD applies the privatized update with heavy-ball momentum:
// m ← β m + u, θ ← θ − η m (β = 0 is plain SGD). It is post-processing.
type ServerSGD struct {
	LR       float64
	Momentum float64
	mom      []float64
}

// Validate reports a bad learning rate or momentum.
func (s *ServerSGD) Validate() error {
	if !(s.LR > 0) {
		return fmt.Errorf("aggregators: server learning rate %v must be positive", s.LR)
	}
	if s.Momentum < 0 || s.Momentum >= 1 {
		return fmt.Errorf("aggregators: server momentum %v must be in [0, 1)", s.Momentum)
	}
	return nil
}

// Step updates theta in place with the update u.
func (s *ServerSGD) Step(theta, u []float32) {
	if len(theta) != len(u) {
		panic(fmt.Sprintf("aggregators: update of %d values for %d parameters", len(u), len(theta)))
	}
	if s.Momentum == 0 {
		for i, x := range u {
			theta[i] -= float32(s.LR * float64(x))
		}
		return
	}
	if len(s.mom) != len(theta) {
		s.mom = make([]float64, len(theta))
	}
	for i, x := range u {
		s.mom[i] = s.Momentum*s.mom[i] + float64(x)
		theta[i] -= float32(s.LR * s.mom[i])
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
