package aggregators

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"dpfl/aggregators/strategy"
	"dpfl/sim/rng"
)

// NoiseWeights returns the weight matrix W of a strategy's gradient-space
// noise, w = W z (rounds × latents): C̃⁻¹ for strategies with a square
// lower-triangular factor, and for trees the first differences of the
// estimator's prefix weights (the noise added in round t is the estimate of
// prefix t minus that of prefix t−1, Kairouz et al. 2021 Thm B.1), over one latent per node;
// for restarted trees the weights are block-diagonal (a block's first round
// gets its own tree's first estimate).
func NoiseWeights(s strategy.Strategy) (*mat.Dense, error) {
	if t, ok := s.(strategy.PrefixWeighted); ok {
		pw, err := t.PrefixWeights()
		if err != nil {
			return nil, err
		}
		n, m := pw.Dims()
		w := mat.NewDense(n, m, nil)
		for r := 0; r < n; r++ {
			for j := 0; j < m; j++ {
				v := pw.At(r, j)
				if r > 0 {
					v -= pw.At(r-1, j)
				}
				w.Set(r, j, v)
			}
		}
		return w, nil
	}
	c, err := s.Factor()
	if err != nil {
		return nil, err
	}
	n, _ := c.Dims()
	var inv mat.TriDense
	if err := inv.InverseTri(c); err != nil {
		return nil, fmt.Errorf("aggregators: inverting %s's factor: %w", s.String(), err)
	}
	w := mat.NewDense(n, n, nil)
	w.Copy(&inv)
	return w, nil
}

// BandedWidth returns b when the strategy's factor C is lower-triangular with
// b < n bands (BandMF, truncated ν-DP-FTRL), whose noise C⁻¹z the banded
// recurrence streams keeping b−1 past noise vectors; 0 otherwise.
func BandedWidth(s strategy.Strategy) int {
	if bs, ok := s.(strategy.Banded); ok {
		if b := bs.Bands(); b > 0 && b < s.N() {
			return b
		}
	}
	return 0
}

// NoiseFor builds the streaming noise source of a strategy for models of
// dimension d: independent noise for identity; in Store mode, the buffers of
// a BLT (O(m·d) memory and time per round) and the banded recurrence for a
// banded factorization (O(b·d) memory and time per round);
// otherwise a Linear source in the given mode (a banded factor in Regenerate
// mode: O(d) memory, every past latent redrawn each round, O(t·d) time at
// round t; the same latents as the recurrence, and the same noise up to
// rounding).
func NoiseFor(s strategy.Strategy, root rng.Root, d int, mode Mode) (NoiseSource, error) {
	if independent(s) {
		return NewIdentityNoise(root), nil
	}
	if bs, ok := s.(strategy.Buffered); ok && mode == Store {
		theta, omega := bs.Buffers()
		return NewBLTNoise(theta, omega, s.N(), root, d)
	}
	if b := BandedWidth(s); b > 0 && mode == Store {
		c, err := s.Factor()
		if err != nil {
			return nil, err
		}
		return NewBanded(c, b, root, d)
	}
	w, err := NoiseWeights(s)
	if err != nil {
		return nil, err
	}
	label := "noise"
	if _, ok := s.(strategy.PrefixWeighted); ok {
		label = "noise/tree-node"
	}
	return NewLinear(w, label, root, d, mode), nil
}
