package aggregators

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"dpfl/aggregators/strategy"
	"dpfl/sim/rng"
)

// prefixWeighted is a tree strategy (one tree, or restarted trees): its
// noise is the first differences of its prefix estimator's weights.
type prefixWeighted interface {
	PrefixWeights() (*mat.Dense, error)
}

// NoiseWeights returns the weight matrix W of a strategy's gradient-space
// noise, w = W z (rounds × latents): C̃⁻¹ for strategies with a square
// lower-triangular factor, and for trees the first differences of the
// estimator's prefix weights (the noise added in round t is the estimate of
// prefix t minus that of prefix t−1, K21 Thm B.1), over one latent per node;
// for restarted trees the weights are block-diagonal (a block's first round
// gets its own tree's first estimate).
func NoiseWeights(s strategy.Strategy) (*mat.Dense, error) {
	if t, ok := s.(prefixWeighted); ok {
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
		return nil, fmt.Errorf("aggregators: inverting %s's factor: %w", s.Name(), err)
	}
	w := mat.NewDense(n, n, nil)
	w.Copy(&inv)
	return w, nil
}

// NoiseFor builds the streaming noise source of a strategy for models of
// dimension d: independent noise for identity, the banded recurrence for a
// banded factorization (BandMF, truncated ν-DP-FTRL: O(b·d)), and a Linear
// source (mode Store or Regenerate) for the rest.
func NoiseFor(s strategy.Strategy, root rng.Root, d int, mode Mode) (NoiseSource, error) {
	switch st := s.(type) {
	case strategy.Identity:
		return NewIdentityNoise(root), nil
	case *strategy.Nu:
		if b := st.Bands(); b < st.N() {
			c, err := st.Factor()
			if err != nil {
				return nil, err
			}
			return NewBanded(c, b, root, d)
		}
	case *strategy.Factorization:
		if b := st.Bands(); b > 0 && b < st.N() {
			c, err := st.Factor()
			if err != nil {
				return nil, err
			}
			return NewBanded(c, b, root, d)
		}
	}
	w, err := NoiseWeights(s)
	if err != nil {
		return nil, err
	}
	label := "noise"
	if _, ok := s.(prefixWeighted); ok {
		label = "noise/tree-node"
	}
	return NewLinear(w, label, root, d, mode), nil
}
