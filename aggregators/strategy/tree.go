package strategy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

func init() {
	for i, est := range []TreeEstimator{TreeVanilla, TreeOnline, TreeFull} {
		Register(Builder{Name: [...]string{"tree", "tree-online", "tree-full"}[i], Order: 1 + i, Memory: denseMemory([...]float64{3, 4, 8}[i]),
			Build: func(_ context.Context, cfg Config) (Strategy, error) { return buildTree(cfg, est) }})
	}
}

// TreeParams are the tree strategies' own parameters
// (strategy.Config.Params; nil: the zero value).
type TreeParams struct {
	// Complete completes each tree (each block of a restarted tree) to a
	// power of two with virtual rounds that add zeros: the tree completion
	// trick of Kairouz et al. 2021 App. D.3.1. See Tree.Completed.
	Complete bool
}

func buildTree(cfg Config, est TreeEstimator) (Strategy, error) {
	var p TreeParams
	switch v := cfg.Params.(type) {
	case nil:
	case TreeParams:
		p = v
	default:
		return nil, fmt.Errorf("strategy: tree parameters of type %T", cfg.Params)
	}
	s, err := buildTreeOf(cfg, est)
	if err != nil || !p.Complete {
		return s, err
	}
	switch t := s.(type) {
	case *Tree:
		return t.Completed(), nil
	case *TreeRestarts:
		return t.Completed(), nil
	}
	return s, nil
}

func buildTreeOf(cfg Config, est TreeEstimator) (Strategy, error) {
	n := cfg.Workload.N()
	if len(cfg.RestartSegments) > 0 {
		sum := 0
		for _, l := range cfg.RestartSegments {
			if l <= 0 {
				return nil, fmt.Errorf("strategy: tree segment lengths must be positive, got %v", cfg.RestartSegments)
			}
			sum += l
		}
		if sum != n || cfg.RestartEvery > 0 {
			return nil, fmt.Errorf("strategy: tree segments %v sum to %d rounds, the workload has %d (and RestartEvery must be 0)", cfg.RestartSegments, sum, n)
		}
		return NewTreeSegments(cfg.RestartSegments, est), nil
	}
	if cfg.RestartEvery > 0 {
		return NewTreeRestarts(n, cfg.RestartEvery, est), nil
	}
	return NewTree(n, est), nil
}

// TreeEstimator selects how prefix sums are decoded from the tree's nodes.
type TreeEstimator int

const (
	// TreeVanilla sums the nodes of the dyadic decomposition of [0,t]
	// (Kairouz et al. 2021).
	TreeVanilla TreeEstimator = iota
	// TreeOnline is Honaker's estimator from below (Denisov et al. 2022 App. C; Kairouz et al. 2021 Eq. 4
	// with the typo fixed).
	TreeOnline
	// TreeFull is the minimum-variance decoder A T⁺ ("Optimal TreeAgg").
	TreeFull
)

// Node is a complete dyadic block [Start, Start+Len) of rounds (0-based).
type Node struct{ Start, Len int }

// Tree is binary-tree aggregation over n rounds. For n not a power of two
// only the complete dyadic nodes inside [0,n) are kept (a forest); there are
// 2n − popcount(n) of them, unless the tree is completed (Completed).
type Tree struct {
	n     int
	est   TreeEstimator
	nodes []Node
	index map[Node]int
	// partial are a completed tree's nodes that also cover virtual rounds
	// (at or after n), as their real parts [Start, n), one per level whose
	// length does not divide n, lowest first; their rows follow the
	// complete nodes' in C.
	partial []Node
}

var (
	_ Strategy       = (*Tree)(nil)
	_ Analyzed       = (*Tree)(nil)
	_ PrefixWeighted = (*Tree)(nil)
)

// NewTree returns the tree strategy with the given estimator.
func NewTree(n int, est TreeEstimator) *Tree {
	if n <= 0 {
		panic("strategy: non-positive n")
	}
	if est < TreeVanilla || est > TreeFull {
		panic("strategy: unknown tree estimator")
	}
	t := &Tree{n: n, est: est, index: make(map[Node]int)}
	for l := 1; l <= n; l *= 2 {
		for s := 0; s+l <= n; s += l {
			t.index[Node{s, l}] = len(t.nodes)
			t.nodes = append(t.nodes, Node{s, l})
		}
	}
	return t
}

// Completed returns the tree completed to the next power of two,
// 2^h ≥ n rounds, with virtual rounds n..2^h−1 that add zeros (Kairouz et
// al. 2021 App. D.3.1, the tree completion trick): the nodes of the tree of
// 2^h leaves that hold a real round are kept, those that also cover
// virtual ones as their real parts, and every real round is in h+1 nodes
// (one per level), against ⌈log₂(n+1)⌉ in the forest. The prefix sums
// before round n−1 are decoded as before (the extra nodes are released only
// once the virtual rounds are added, after round n−1); the last one, the
// sum of all n rounds, is read from all the nodes: the root alone for the
// vanilla estimator (one node's noise, against popcount(n) nodes'), the
// minimum-variance combination of the nodes for the online and full
// estimators. Restarting after round n−1 then carries less noise into the
// next tree. The sensitivity counts real rounds only (virtual rounds hold no
// one's data). For n a power of two it is the same tree.
func (t *Tree) Completed() *Tree {
	c := NewTree(t.n, t.est)
	for l := 1; ; l *= 2 {
		if r := t.n % l; r != 0 {
			c.partial = append(c.partial, Node{t.n - r, r})
		}
		if l >= t.n {
			break
		}
	}
	return c
}

// String returns "tree", "tree-online" or "tree-full", with "-completed"
// for a completed tree.
func (t *Tree) String() string {
	s := [...]string{"tree", "tree-online", "tree-full"}[t.est]
	if t.partial != nil {
		s += "-completed"
	}
	return s
}

// rows returns every node in C's row order: the complete ones, then the
// partial ones.
func (t *Tree) rows() []Node {
	return append(t.Nodes(), t.partial...)
}

// N returns the number of rounds.
func (t *Tree) N() int { return t.n }

// Nodes returns the complete dyadic nodes; row r of C is the indicator of
// Nodes()[r]. Leaves come first, then blocks of length 2, 4, ….
func (t *Tree) Nodes() []Node { return append([]Node(nil), t.nodes...) }

// Levels returns ⌈log₂(n+1)⌉, the number of nodes containing a leaf at most
// (⌈log₂ n⌉+1 for a completed tree: every leaf is in that many).
func (t *Tree) Levels() int {
	if t.partial != nil {
		return bits.Len(uint(t.n-1)) + 1
	}
	return bits.Len(uint(t.n))
}

// Encoder returns the node-indicator matrix T (m×n), its rows in the order
// of Nodes and then a completed tree's partial nodes.
func (t *Tree) Encoder() *mat.Dense {
	rows := t.rows()
	c := mat.NewDense(len(rows), t.n, nil)
	for r, nd := range rows {
		for j := nd.Start; j < nd.Start+nd.Len; j++ {
			c.Set(r, j, 1)
		}
	}
	return c
}

// Gram returns X = TᵀT: X_ij is the number of nodes containing both i and j.
func (t *Tree) Gram() *mat.SymDense {
	x := mat.NewSymDense(t.n, nil)
	for _, nd := range t.rows() {
		for i := nd.Start; i < nd.Start+nd.Len; i++ {
			for j := i; j < nd.Start+nd.Len; j++ {
				x.SetSym(i, j, x.At(i, j)+1)
			}
		}
	}
	return x
}

// Factor returns C̃ with C̃ᵀC̃ = TᵀT.
func (t *Tree) Factor() (*mat.TriDense, error) { return LowerFactor(t.Gram()) }

// decomposition returns the dyadic blocks of [0, t) (t ≥ 1), largest first.
func decomposition(t int) []Node {
	var out []Node
	s := 0
	for b := bits.Len(uint(t)) - 1; b >= 0; b-- {
		if t&(1<<b) != 0 {
			out = append(out, Node{s, 1 << b})
			s += 1 << b
		}
	}
	return out
}

// PrefixWeights returns the estimator's weights W (n×m) with W T = S: row t
// estimates the prefix sum of rounds 0..t from the node values. Runtime
// noise for round t is (W z)_t − (W z)_{t−1} for node noises z.
func (t *Tree) PrefixWeights() (*mat.Dense, error) {
	m := len(t.nodes) + len(t.partial)
	w := mat.NewDense(t.n, m, nil)
	defer t.completeLast(w)
	switch t.est {
	case TreeVanilla:
		for r := 0; r < t.n; r++ {
			for _, b := range decomposition(r + 1) {
				w.Set(r, t.index[b], 1)
			}
		}
	case TreeOnline:
		for r := 0; r < t.n; r++ {
			for _, b := range decomposition(r + 1) {
				// s[block] = Σ_depth 2^{-depth}·(nodes at that depth) / (2 − 1/m).
				norm := 2 - 1/float64(b.Len)
				for l, f := b.Len, 1.0; l >= 1; l, f = l/2, f/2 {
					for s := b.Start; s < b.Start+b.Len; s += l {
						w.Set(r, t.index[Node{s, l}], f/norm)
					}
				}
			}
		}
	case TreeFull:
		// W = S T⁺ = S X⁻¹ Tᵀ.
		var ch mat.Cholesky
		if !ch.Factorize(t.Gram()) {
			return nil, errors.New("strategy: tree Gram matrix not positive definite")
		}
		var xt mat.Dense
		if err := ch.SolveTo(&xt, t.Encoder().T()); err != nil {
			return nil, fmt.Errorf("strategy: tree pseudo-inverse: %w", err)
		}
		Prefix(t.n).mulA(w, &xt)
	}
	return w, nil
}

// completeLast sets a completed tree's last prefix weights (every node is
// released by then): the root for the vanilla estimator, the
// minimum-variance unbiased combination 1ᵀ T⁺ for the others (the full
// estimator's row already is).
func (t *Tree) completeLast(w *mat.Dense) {
	if t.partial == nil || t.est == TreeFull {
		return
	}
	last := w.RawRowView(t.n - 1)
	clear(last)
	if t.est == TreeVanilla {
		last[len(last)-1] = 1 // the root: the highest partial node
		return
	}
	var ch mat.Cholesky
	if !ch.Factorize(t.Gram()) {
		panic("strategy: a tree's Gram matrix is positive definite (it contains the leaves)")
	}
	ones := mat.NewVecDense(t.n, nil)
	for i := range t.n {
		ones.SetVec(i, 1)
	}
	var y mat.VecDense // X⁻¹ 1, then T X⁻¹ 1
	if err := ch.SolveVecTo(&y, ones); err != nil {
		panic(fmt.Sprintf("strategy: tree Gram solve: %v", err))
	}
	var row mat.VecDense
	row.MulVec(t.Encoder(), &y)
	for j := range last {
		last[j] = row.AtVec(j)
	}
}

// Decoder returns B = A S⁻¹ W (B = A T⁺ for the full estimator).
func (t *Tree) Decoder(wl *Workload) (*mat.Dense, error) {
	w, err := t.PrefixWeights()
	if err != nil {
		return nil, err
	}
	return decodePrefix(w, wl), nil
}

// Sensitivity is exact for every schema: ⌈log₂(n+1)⌉ nodes per leaf under
// single participation, the pattern formula under (k,b) (T ≥ 0), and the
// exact dynamic program over the forest under b-min-sep.
func (t *Tree) Sensitivity(p participation.Pattern) (Sensitivity, error) {
	q := clamp(patternOf(p), t.n)
	switch q.shape {
	case once:
		return Sensitivity{Value: math.Sqrt(float64(t.Levels())), Exact: true, Method: "tree levels (exact)"}, nil
	case spaced:
		if t.partial != nil {
			sizes, virt := t.completedSizes()
			return Sensitivity{Value: math.Sqrt(forestMinSepSens2(sizes, virt, min(q.K, ceilDiv(t.n, q.B)), min(q.B, t.n))), Exact: true, Method: "completed-tree DP (exact)"}, nil
		}
		return Sensitivity{Value: math.Sqrt(TreeMinSepSens2(t.n, q.K, q.B)), Exact: true, Method: "tree DP (exact)"}, nil
	}
	return SensitivityOf(t.Gram(), p)
}

// completedSizes returns the trees of the tree's forest and their virtual
// rounds: one tree of 2^h leaves with 2^h − n virtual ones when completed,
// else the complete dyadic trees of [0,n) with none.
func (t *Tree) completedSizes() (sizes, virt []int) {
	if t.partial == nil {
		sizes = forestSizes(nil, t.n)
		return sizes, make([]int, len(sizes))
	}
	s := 1 << bits.Len(uint(t.n-1))
	return []int{s}, []int{s - t.n}
}

// Cost: the vanilla and online estimators keep one noise vector per level;
// the full estimator streams a dense C̃⁻¹.
func (t *Tree) Cost() Cost {
	l := float64(t.Levels())
	if t.est == TreeFull {
		return Cost{Time: float64(t.n), Memory: float64(t.n), Note: "dense C̃⁻¹ row per round (or O(d) memory regenerating z_j from seeds)"}
	}
	return Cost{Time: l, Memory: l + 1, Note: "one noise vector per tree level"}
}

// TreeMinSepSens2 returns the exact squared sensitivity of the tree (complete
// nodes of [0,n)) under b-min-sep participation with at most k
// participations: max over patterns of Σ_nodes (participations in node)².
// It is a dynamic program over the forest and over each tree's halves, with
// the distance constraints to the left and right ends as state.
func TreeMinSepSens2(n, k, b int) float64 {
	if n <= 0 || k < 0 || b < 1 {
		panic("strategy: bad tree sensitivity arguments")
	}
	b = min(b, n)
	k = min(k, ceilDiv(n, b))
	sizes := forestSizes(nil, n)
	return forestMinSepSens2(sizes, make([]int, len(sizes)), k, b)
}

// forestSizes appends the sizes of the complete dyadic trees of [0,n),
// largest first (the binary expansion of n).
func forestSizes(sizes []int, n int) []int {
	for l := bits.Len(uint(n)) - 1; l >= 0; l-- {
		if n&(1<<l) != 0 {
			sizes = append(sizes, 1<<l)
		}
	}
	return sizes
}

// forestMinSepSens2 is TreeMinSepSens2 for any sequence of consecutive
// complete trees (power-of-two sizes, in round order): the nodes of a tree
// restarted every few rounds are such a sequence. Tree i's last virt[i]
// leaves are virtual (a completed tree): no one takes part there, and the
// next tree's first round follows its last real one.
func forestMinSepSens2(sizes, virt []int, k, b int) float64 {
	d := &treeDP{b: b, memo: make(map[[4]int]float64)}
	// g(idx, c, L): trees idx.. with at most c participations, first at
	// offset ≥ L in tree idx.
	type key struct{ idx, c, L int }
	gm := make(map[key]float64)
	var g func(idx, c, L int) float64
	g = func(idx, c, L int) float64 {
		if idx == len(sizes) || c == 0 {
			return 0
		}
		kk := key{idx, c, L}
		if v, ok := gm[kk]; ok {
			return v
		}
		s, v := sizes[idx], virt[idx]
		best := g(idx+1, c, max(0, L-(s-v)))
		for i := 1; i <= c; i++ {
			for R := 0; R < b; R++ { // R: real rounds after the last participation here (b−1: any)
				f := d.f(s, i, L, R+v)
				if math.IsInf(f, -1) {
					continue
				}
				best = math.Max(best, f+g(idx+1, c-i, b-1-R))
			}
		}
		gm[kk] = best
		return best
	}
	return g(0, k, 0)
}

type treeDP struct {
	b    int
	memo map[[4]int]float64
}

// f returns the max of Σ_nodes c_z² over sets of exactly c positions in a
// complete tree of size s, first ≥ L, last ≤ s−1−R, gaps ≥ b; −∞ if none.
func (d *treeDP) f(s, c, L, R int) float64 {
	if c == 0 {
		return 0
	}
	if L+R > s-1 || (c-1)*d.b > s-1-L-R {
		return math.Inf(-1)
	}
	if c == 1 {
		return float64(bits.Len(uint(s))) // nodes on a leaf-to-root path
	}
	key := [4]int{s, c, L, R}
	if v, ok := d.memo[key]; ok {
		return v
	}
	h := s / 2
	best := math.Inf(-1)
	// All in the right half, or all in the left half.
	best = math.Max(best, d.f(h, c, max(L-h, 0), R))
	best = math.Max(best, d.f(h, c, L, max(R-h, 0)))
	for i := 1; i < c; i++ {
		for j := 0; j < d.b; j++ {
			fl := d.f(h, i, L, d.b-1-j)
			if math.IsInf(fl, -1) {
				continue
			}
			fr := d.f(h, c-i, j, R)
			best = math.Max(best, fl+fr)
		}
	}
	best += float64(c * c)
	d.memo[key] = best
	return best
}
