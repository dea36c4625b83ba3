package aggregators

import (
	"fmt"

	"dpfl/sim/rng"
)

// BLTNoise streams w = C⁻¹z for a BLT strategy (strategy.BLT) with m
// buffers S_i of the model's dimension:
//
//	w_t = z_t − Σ_i ω_i S_i,   then S_i ← θ_i S_i + w_t,
//
// O(m·d) memory and time per round, whatever the number of rounds; z_t is
// drawn from the stream ("noise", t), as for every C⁻¹z source. Rounds must
// be asked for in order.
type BLTNoise struct {
	theta, omega []float64
	n, d         int
	l            *latents
	bufs         [][]float64
	next         int
}

// NewBLTNoise returns the source for the BLT with decays theta and output
// scales omega over n rounds, for models of dimension d.
func NewBLTNoise(theta, omega []float64, n int, root rng.Root, d int) (*BLTNoise, error) {
	if len(theta) != len(omega) || n < 1 {
		return nil, fmt.Errorf("aggregators: BLT with %d decays, %d scales over %d rounds", len(theta), len(omega), n)
	}
	s := &BLTNoise{theta: append([]float64(nil), theta...), omega: append([]float64(nil), omega...), n: n, d: d, l: newLatents(root, "noise"), bufs: make([][]float64, len(theta))}
	for i := range s.bufs {
		s.bufs[i] = make([]float64, d)
	}
	return s, nil
}

// Next implements NoiseSource.
func (s *BLTNoise) Next(dst []float64, t int) error {
	if t != s.next {
		return fmt.Errorf("aggregators: BLT noise asked for round %d, expected round %d", t, s.next)
	}
	if t >= s.n {
		return fmt.Errorf("aggregators: noise for round %d of a %d-round mechanism", t, s.n)
	}
	if len(dst) != s.d {
		panic(fmt.Sprintf("aggregators: noise buffer of %d for dimension %d", len(dst), s.d))
	}
	s.l.fill(dst, t)
	for i, b := range s.bufs {
		axpy(dst, -s.omega[i], b)
	}
	for i, b := range s.bufs {
		th := s.theta[i]
		for j, v := range dst {
			b[j] = th*b[j] + v
		}
	}
	s.next++
	return nil
}

// Seek implements NoiseSource by replaying rounds 0..t−1 (O(t·m·d) once), so
// that the buffers and the following rounds are bit-identical to an
// uninterrupted run.
func (s *BLTNoise) Seek(t int) error {
	if t < 0 || t > s.n {
		return fmt.Errorf("aggregators: seek to round %d of a %d-round mechanism", t, s.n)
	}
	s.next = 0
	for _, b := range s.bufs {
		clear(b)
	}
	buf := make([]float64, s.d)
	for r := 0; r < t; r++ {
		if err := s.Next(buf, r); err != nil {
			return err
		}
	}
	return nil
}

// Bytes implements NoiseSource: the m buffers.
func (s *BLTNoise) Bytes() int64 { return int64(len(s.bufs)) * int64(s.d) * 8 }
