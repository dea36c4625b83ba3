package strategy

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// TreeRestarts is tree aggregation restarted at the start of each segment of
// a schedule of rounds: every R rounds (Kairouz et al. 2021 TreeRestart; "restart each
// epoch" when R is the epoch length b) or any list of segment lengths (as
// dp_accounting's tree aggregation events allow). The rounds are cut into
// blocks, each with its own tree, so C is block-diagonal with one tree
// matrix per block. The noise of a block's first round is its own tree's
// first prefix estimate: the previous blocks' final estimates stay in the
// model, so the prefix estimate of round t is the sum of the earlier blocks'
// final estimates plus the current block's estimate.
type TreeRestarts struct {
	n, every int   // every: the period, or 0 for an irregular schedule
	starts   []int // first round of each block
	est      TreeEstimator
	blocks   []*Tree
}

var (
	_ Strategy       = (*TreeRestarts)(nil)
	_ Analyzed       = (*TreeRestarts)(nil)
	_ PrefixWeighted = (*TreeRestarts)(nil)
)

// NewTreeRestarts returns the tree with the given estimator restarted every
// `every` rounds (every ≥ n is a single tree).
func NewTreeRestarts(n, every int, est TreeEstimator) *TreeRestarts {
	if n <= 0 || every <= 0 {
		panic("strategy: non-positive n or restart period")
	}
	var segs []int
	for start := 0; start < n; start += every {
		segs = append(segs, min(every, n-start))
	}
	s := NewTreeSegments(segs, est)
	s.every = every
	return s
}

// NewTreeSegments returns the tree with the given estimator restarted at the
// start of each segment: block i has segments[i] rounds, and the strategy
// has their sum. It panics on an empty list or a non-positive length
// (configuration code validates first).
func NewTreeSegments(segments []int, est TreeEstimator) *TreeRestarts {
	if len(segments) == 0 {
		panic("strategy: no tree segments")
	}
	s := &TreeRestarts{est: est}
	for _, l := range segments {
		if l <= 0 {
			panic("strategy: non-positive tree segment")
		}
		s.starts = append(s.starts, s.n)
		s.blocks = append(s.blocks, NewTree(l, est))
		s.n += l
	}
	return s
}

// Completed returns the restarted tree with every block's tree completed
// (Tree.Completed): each block's last prefix sum, which the later blocks
// carry, is read from all its nodes.
func (s *TreeRestarts) Completed() *TreeRestarts {
	c := *s
	c.blocks = make([]*Tree, len(s.blocks))
	for i, t := range s.blocks {
		c.blocks[i] = t.Completed()
	}
	return &c
}

// String returns the tree's name with "-restart", e.g. "tree-online-restart".
func (s *TreeRestarts) String() string { return s.blocks[0].String() + "-restart" }

// N returns the number of rounds.
func (s *TreeRestarts) N() int { return s.n }

// Every returns the restart period in rounds, or 0 for a schedule given as
// segment lengths (NewTreeSegments).
func (s *TreeRestarts) Every() int { return s.every }

// Segments returns the blocks' lengths in rounds, in round order.
func (s *TreeRestarts) Segments() []int {
	out := make([]int, len(s.blocks))
	for i, t := range s.blocks {
		out[i] = t.n
	}
	return out
}

// largest returns the block with the most rounds (the first of them).
func (s *TreeRestarts) largest() *Tree {
	b := s.blocks[0]
	for _, t := range s.blocks[1:] {
		if t.n > b.n {
			b = t
		}
	}
	return b
}

// Blocks returns the trees, one per block, in round order.

// Nodes returns the nodes of every block's tree, in round coordinates, block
// after block: row r of C is the indicator of Nodes()[r].
func (s *TreeRestarts) Nodes() []Node {
	var out []Node
	for e, t := range s.blocks {
		for _, nd := range t.rows() {
			out = append(out, Node{s.starts[e] + nd.Start, nd.Len})
		}
	}
	return out
}

// blockDiag places each block's matrix (rows × block rounds, from f) on the
// diagonal of an (Σ rows) × n matrix.
func (s *TreeRestarts) blockDiag(f func(t *Tree) *mat.Dense) *mat.Dense {
	parts := make([]*mat.Dense, len(s.blocks))
	rows := 0
	for e, t := range s.blocks {
		parts[e] = f(t)
		r, _ := parts[e].Dims()
		rows += r
	}
	out := mat.NewDense(rows, s.n, nil)
	r0 := 0
	for e, p := range parts {
		r, c := p.Dims()
		out.Slice(r0, r0+r, s.starts[e], s.starts[e]+c).(*mat.Dense).Copy(p)
		r0 += r
	}
	return out
}

// Encoder returns the block-diagonal C (one tree matrix per block).
func (s *TreeRestarts) Encoder() *mat.Dense { return s.blockDiag((*Tree).Encoder) }

// Gram returns the block-diagonal X = CᵀC.
func (s *TreeRestarts) Gram() *mat.SymDense {
	x := mat.NewSymDense(s.n, nil)
	for e, t := range s.blocks {
		g := t.Gram()
		off := s.starts[e]
		for i := 0; i < t.n; i++ {
			for j := i; j < t.n; j++ {
				x.SetSym(off+i, off+j, g.At(i, j))
			}
		}
	}
	return x
}

// Factor returns C̃ with C̃ᵀC̃ = X (block-diagonal too).
func (s *TreeRestarts) Factor() (*mat.TriDense, error) { return LowerFactor(s.Gram()) }

// PrefixWeights returns W (n × nodes) with W C = S: row t is the sum of the
// earlier blocks' final prefix estimates and the current block's estimate.
// Its first differences are the noise of each round, which never mixes
// nodes of two blocks.
func (s *TreeRestarts) PrefixWeights() (*mat.Dense, error) { return s.prefixFromBlocks() }

func (s *TreeRestarts) prefixFromBlocks() (*mat.Dense, error) {
	m := 0
	for _, t := range s.blocks {
		m += len(t.nodes) + len(t.partial)
	}
	w := mat.NewDense(s.n, m, nil)
	c0 := 0
	carry := make([]float64, m) // the earlier blocks' final estimates
	for e, t := range s.blocks {
		pw, err := t.PrefixWeights()
		if err != nil {
			return nil, err
		}
		mb := len(t.nodes) + len(t.partial)
		for r := 0; r < t.n; r++ {
			row := w.RawRowView(s.starts[e] + r)
			copy(row, carry)
			for j := 0; j < mb; j++ {
				row[c0+j] += pw.At(r, j)
			}
		}
		copy(carry, w.RawRowView(s.starts[e]+t.n-1))
		c0 += mb
	}
	return w, nil
}

// Decoder returns B = A S⁻¹ W (the workload applied to the per-round noise
// weights).
func (s *TreeRestarts) Decoder(wl *Workload) (*mat.Dense, error) {
	w, err := s.prefixFromBlocks()
	if err != nil {
		return nil, err
	}
	return decodePrefix(w, wl), nil
}

// decodePrefix returns A S⁻¹ W for prefix weights W (W itself for A = S).
func decodePrefix(w *mat.Dense, wl *Workload) *mat.Dense {
	if wl.IsPrefix() {
		return w
	}
	n, m := w.Dims()
	d := mat.NewDense(n, m, nil)
	for r := n - 1; r >= 0; r-- {
		row := d.RawRowView(r)
		copy(row, w.RawRowView(r))
		if r > 0 {
			prev := w.RawRowView(r - 1)
			for j := range row {
				row[j] -= prev[j]
			}
		}
	}
	var b mat.Dense
	b.Mul(wl.A(), d)
	return &b
}

// Sensitivity is exact for every schema. Single participation: the levels
// of the largest block's tree. b-min-sep: the tree dynamic program
// run over the forest of all blocks' complete trees (the separation
// constraint crosses block boundaries). (k,b): the pattern formula on the
// block-diagonal Gram matrix (X ≥ 0). A client taking part at most once per
// block (restart every b rounds under (k,b) or b-min-sep) has sens² = Σ over
// its blocks of the nodes containing its round there, at most k̂ times the
// per-tree levels.
func (s *TreeRestarts) Sensitivity(p participation.Pattern) (Sensitivity, error) {
	q := clamp(patternOf(p), s.n)
	switch q.shape {
	case once:
		return Sensitivity{Value: math.Sqrt(float64(s.largest().Levels())), Exact: true, Method: "largest restarted tree's levels (exact)"}, nil
	case spaced:
		var sizes, virt []int
		for _, t := range s.blocks {
			ts, tv := t.completedSizes()
			sizes, virt = append(sizes, ts...), append(virt, tv...)
		}
		return Sensitivity{Value: math.Sqrt(forestMinSepSens2(sizes, virt, q.K, q.B)), Exact: true, Method: "restarted-tree DP (exact)"}, nil
	}
	return SensitivityOf(s.Gram(), p)
}

// Cost: as one tree of the largest block's length.
func (s *TreeRestarts) Cost() Cost {
	c := s.largest().Cost()
	if s.every > 0 {
		c.Note += fmt.Sprintf(", restarted every %d rounds", s.every)
	} else {
		c.Note += fmt.Sprintf(", restarted in segments %v", s.Segments())
	}
	return c
}
