package aggregators

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"dpfl/aggregators/strategy"
	"dpfl/participation"
	"dpfl/sim/rng"
)

// latentMatrix returns Z (latents × d) as the sources draw it.
func latentMatrix(root rng.Root, label string, m, d int) *mat.Dense {
	z := mat.NewDense(m, d, nil)
	l := newLatents(root, label)
	row := make([]float64, d)
	for j := 0; j < m; j++ {
		l.fill(row, j)
		z.SetRow(j, row)
	}
	return z
}

func strategies(t *testing.T, n int) []strategy.Strategy {
	t.Helper()
	ctx := context.Background()
	w := strategy.Prefix(n)
	var out []strategy.Strategy
	out = append(out, strategy.NewIdentity(n), strategy.NewTree(n, strategy.TreeVanilla), strategy.NewTree(n, strategy.TreeOnline),
		strategy.NewTree(n, strategy.TreeFull), strategy.NewNu(n, 0.05), strategy.NewNuBanded(n, 0.05, 4), strategy.NewNuBanded(n, 0.05, 7),
		strategy.NewTreeRestarts(n, 4, strategy.TreeOnline), strategy.NewTreeRestarts(n, 3, strategy.TreeFull))
	opt, err := strategy.OptimalSingle(ctx, w, strategy.FixedPointOptions{Gap: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	blt, err := strategy.NewBLT(n, []float64{0.95, 0.6, 0.1}, []float64{0.25, 0.15, 0.05})
	if err != nil {
		t.Fatal(err)
	}
	bltOpt, err := strategy.OptimizeBLT(ctx, w, 2, participation.AtMostOnce, strategy.LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := strategy.NewBandedToeplitz(n, []float64{1, -0.3, 0.2})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, blt, bltOpt, tb)
	band, err := strategy.BandMF(ctx, w, 3, strategy.LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return append(out, opt, band)
}

// TestNoiseMatchesMaterializedProduct: for every strategy, T rounds of
// streamed noise equal the materialized product computed with gonum/mat from
// the same latent vectors — C̃⁻¹Z for square factors, the tree's row
// differences times the node noises — to 1e-9; Store and Regenerate modes
// are bit-identical, except for banded factors and BLTs (recurrence or
// buffers vs explicit inverse), which agree to 1e-12 relative.
func TestNoiseMatchesMaterializedProduct(t *testing.T) {
	const n, d = 13, 7
	root := rng.New(3)
	for _, s := range strategies(t, n) {
		var want mat.Dense
		label := "noise"
		if tr, ok := s.(strategy.PrefixWeighted); ok {
			label = "noise/tree-node"
			pw, _ := tr.PrefixWeights()
			_, m := pw.Dims()
			var prefix mat.Dense
			prefix.Mul(pw, latentMatrix(root, label, m, d))
			want.CloneFrom(&prefix)
			for r := n - 1; r > 0; r-- { // row differences
				for c := 0; c < d; c++ {
					want.Set(r, c, prefix.At(r, c)-prefix.At(r-1, c))
				}
			}
		} else {
			c, err := s.Factor()
			if err != nil {
				t.Fatal(err)
			}
			// Solve C̃ W = Z by gonum's triangular solve: an independent path.
			if err := want.Solve(c, latentMatrix(root, label, n, d)); err != nil {
				t.Fatal(err)
			}
		}
		var outs [2][][]float64
		for mi, mode := range []Mode{Store, Regenerate} {
			src, err := NoiseFor(s, root, d, mode)
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < n; r++ {
				row := make([]float64, d)
				if err := src.Next(row, r); err != nil {
					t.Fatal(err)
				}
				for c := range row {
					if math.Abs(row[c]-want.At(r, c)) > 1e-9*(1+math.Abs(want.At(r, c))) {
						t.Fatalf("%s (%v): round %d coordinate %d: streamed %v, materialized %v", s.String(), mode, r, c, row[c], want.At(r, c))
					}
				}
				outs[mi] = append(outs[mi], row)
			}
		}
		for r := range outs[0] {
			_, buffered := s.(strategy.Buffered)
			if BandedWidth(s) == 0 && !buffered && !slices.Equal(outs[0][r], outs[1][r]) {
				t.Fatalf("%s: store and regenerate differ in round %d", s.String(), r)
			}
			// A banded factor: the recurrence (store) and the explicit
			// inverse (regenerate) round differently.
			for c, v := range outs[1][r] {
				if math.Abs(v-outs[0][r][c]) > 1e-12*(1+math.Abs(v)) {
					t.Fatalf("%s: store %v and regenerate %v differ beyond 1e-12 in round %d", s.String(), outs[0][r][c], v, r)
				}
			}
		}
	}
}

// TestNoiseCovariance: over many independent runs (different seeds) the
// empirical covariance of the streamed noise across rounds matches the
// strategy's prediction W Wᵀ (= X⁻¹ for square factors), each entry within 6
// standard errors; a source scaled by 1.1 fails the same test (negative
// control).
func TestNoiseCovariance(t *testing.T) {
	const n, runs = 6, 4000
	for _, s := range strategies(t, n)[1:] { // identity is covered by TestDPFedAvgNoise
		w, err := NoiseWeights(s)
		if err != nil {
			t.Fatal(err)
		}
		var pred mat.Dense
		pred.Mul(w, w.T())
		emp := func(scale float64) bool {
			sum := mat.NewDense(n, n, nil)
			sq := mat.NewDense(n, n, nil)
			x := make([]float64, n)
			row := make([]float64, 1)
			for r := 0; r < runs; r++ {
				src, _ := NoiseFor(s, rng.New(uint64(1000+r)), 1, Regenerate)
				for k := 0; k < n; k++ {
					src.Next(row, k)
					x[k] = scale * row[0]
				}
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						sum.Set(i, j, sum.At(i, j)+x[i]*x[j])
						sq.Set(i, j, sq.At(i, j)+x[i]*x[i]*x[j]*x[j])
					}
				}
			}
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					m := sum.At(i, j) / runs
					v := sq.At(i, j)/runs - m*m
					if math.Abs(m-pred.At(i, j)) > 6*math.Sqrt(v/runs)+1e-12 {
						return false
					}
				}
			}
			return true
		}
		if !emp(1) {
			t.Errorf("%s: empirical covariance does not match W Wᵀ", s.String())
		}
		if emp(1.1) {
			t.Errorf("%s: negative control: noise scaled by 1.1 passed", s.String())
		}
	}
}

func TestLinearPeakAndOrder(t *testing.T) {
	src := NewLinear(mat.NewDiagDense(4, []float64{1, 1, 1, 1}), "noise", rng.New(1), 3, Store)
	if src.PeakLatents() != 1 || src.NonZeros() != 1 {
		t.Fatalf("identity: peak %d nnz %d", src.PeakLatents(), src.NonZeros())
	}
	if err := src.Next(make([]float64, 3), 2); err == nil {
		t.Fatal("store mode accepted a round out of order")
	}
	tree, _ := NoiseFor(strategy.NewTree(64, strategy.TreeVanilla), rng.New(1), 3, Store)
	if p := tree.(*Linear).PeakLatents(); p > 8 { // O(log n) live node noises
		t.Fatalf("vanilla tree over 64 rounds keeps %d node noises alive", p)
	}
}

// TestSeekResumesBitIdentical: for every strategy and memory mode, T rounds
// streamed straight equal, bit for bit, rounds k..T−1 streamed after Seek(k)
// on a fresh source and on a source that had already streamed the whole run
// (resume from a checkpoint); Seek outside [0, T] is refused.
func TestSeekResumesBitIdentical(t *testing.T) {
	const n, d = 13, 5
	root := rng.New(9)
	for _, s := range strategies(t, n) {
		for _, mode := range []Mode{Store, Regenerate} {
			straight := make([][]float64, n)
			src, err := NoiseFor(s, root, d, mode)
			if err != nil {
				t.Fatal(err)
			}
			for r := range straight {
				straight[r] = make([]float64, d)
				if err := src.Next(straight[r], r); err != nil {
					t.Fatal(err)
				}
			}
			used := src
			for _, k := range []int{0, 1, 4, 7, n - 1, n} {
				fresh, _ := NoiseFor(s, root, d, mode)
				for name, r := range map[string]NoiseSource{"fresh": fresh, "used": used} {
					if err := r.Seek(k); err != nil {
						t.Fatalf("%s %v: Seek(%d): %v", s.String(), mode, k, err)
					}
					row := make([]float64, d)
					for tt := k; tt < n; tt++ {
						if err := r.Next(row, tt); err != nil {
							t.Fatalf("%s %v %s: round %d after Seek(%d): %v", s.String(), mode, name, tt, k, err)
						}
						if !slices.Equal(row, straight[tt]) {
							t.Fatalf("%s %v %s: round %d after Seek(%d) differs: %v vs %v", s.String(), mode, name, tt, k, row, straight[tt])
						}
					}
				}
			}
			_, unbounded := used.(*IdentityNoise) // independent noise has no length
			if (!unbounded && used.Seek(n+1) == nil) || used.Seek(-1) == nil {
				t.Fatalf("%s %v: seek outside [0, %d] accepted", s.String(), mode, n)
			}
		}
	}
}

// TestSeekNegativeControl: the resume test above can fail: a Banded source
// whose history is not replayed (next set directly) gives different noise
// after the seek point.
func TestSeekNegativeControl(t *testing.T) {
	c := bandedFactor(20, 4)
	a, _ := NewBanded(c, 4, rng.New(2), 3)
	b, _ := NewBanded(c, 4, rng.New(2), 3)
	x, y := make([]float64, 3), make([]float64, 3)
	for r := 0; r < 6; r++ {
		a.Next(x, r)
	}
	b.next = 5 // skip the replay: empty history
	b.Next(y, 5)
	if slices.Equal(x, y) {
		t.Fatal("a banded source without its history reproduced round 5")
	}
}

// TestDPFTRLMIsServerMomentum: DP-FTRLM (Kairouz et al. 2021 §4.1: v_t = γ v_{t−1} + s_t,
// θ_{t+1} = θ_0 − v_t/λ, with s_t the tree's noisy prefix sum of the
// gradients) is the Correlated aggregator with tree noise followed by
// ServerSGD with momentum γ and learning rate 1/λ: the two trajectories
// agree to float32 rounding (1e-5 relative); with the momentum left out of
// the server the trajectory differs (negative control).
func TestDPFTRLMIsServerMomentum(t *testing.T) {
	const n, d, gamma, lambda, std = 16, 4, 0.9, 2.0, 0.3
	root := rng.New(21)
	for _, s := range []strategy.Strategy{strategy.NewTree(n, strategy.TreeOnline), strategy.NewTreeRestarts(n, 5, strategy.TreeVanilla)} {
		pw, err := s.(strategy.PrefixWeighted).PrefixWeights()
		if err != nil {
			t.Fatal(err)
		}
		_, m := pw.Dims()
		var noise mat.Dense // prefix estimates' noise, n × d
		noise.Mul(pw, latentMatrix(root, "noise/tree-node", m, d))
		grads := make([][]float32, n)
		r := root.Stream("test/grads")
		for i := range grads {
			grads[i] = make([]float32, d)
			for j := range grads[i] {
				grads[i][j] = float32(0.1 * r.NormFloat64())
			}
		}
		// Kairouz et al.'s form.
		theta0 := []float64{1, -1, 0.5, 2}
		want := make([][]float64, n)
		v, prefix := make([]float64, d), make([]float64, d)
		for t0 := 0; t0 < n; t0++ {
			want[t0] = make([]float64, d)
			for j := 0; j < d; j++ {
				prefix[j] += float64(grads[t0][j])
				v[j] = gamma*v[j] + prefix[j] + std*noise.At(t0, j)
				want[t0][j] = theta0[j] - v[j]/lambda
			}
		}
		for _, momentum := range []float64{gamma, 0} {
			src, err := NoiseFor(s, root, d, Store)
			if err != nil {
				t.Fatal(err)
			}
			agg := &Correlated{Clip: 100, NoiseStd: std, ExpectedCohort: 1, Noise: src}
			server := &ServerSGD{LR: 1 / lambda, Momentum: momentum}
			theta := []float32{1, -1, 0.5, 2}
			u := make([]float32, d)
			match := true
			for t0 := 0; t0 < n; t0++ {
				if _, err := agg.Aggregate(u, t0, seqOf([][]float32{slices.Clone(grads[t0])})); err != nil {
					t.Fatal(err)
				}
				server.Step(theta, u, t0)
				for j := range theta {
					if math.Abs(float64(theta[j])-want[t0][j]) > 1e-5*(1+math.Abs(want[t0][j])) {
						match = false
					}
				}
			}
			if match != (momentum == gamma) {
				t.Fatalf("%s, server momentum %v: matches DP-FTRLM = %v", s.String(), momentum, match)
			}
		}
	}
}

// TestBandedBlockedIsPlainRecurrence: the blocked, 8- and 4-row-fused
// Banded.Next is bit-identical to the plain recurrence (fill z_t, one axpy
// per history row, scale) at a dimension that is not a multiple of the
// block, for a band count that exercises both fusions and the remainder
// (14 history rows = 8 + 4 + 2).
func TestBandedBlockedIsPlainRecurrence(t *testing.T) {
	const n, bands, d = 30, 15, 2*bandedBlock + 123
	c := bandedFactor(n, bands)
	src, err := NewBanded(c, bands, rng.New(6), d)
	if err != nil {
		t.Fatal(err)
	}
	l := newLatents(rng.New(6), "noise")
	var past [][]float64
	got := make([]float64, d)
	for tt := 0; tt < n; tt++ {
		want := make([]float64, d)
		l.fill(want, tt)
		for j := max(0, tt-bands+1); j < tt; j++ {
			axpy(want, -c.At(tt, j), past[j])
		}
		for i := range want {
			want[i] *= 1 / c.At(tt, tt)
		}
		past = append(past, want)
		if err := src.Next(got, tt); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: blocked recurrence differs from the plain one", tt)
		}
	}
}

// TestBandedRegenerateIsO1Memory: a banded factor in Regenerate mode keeps
// one vector (the recurrence keeps b−1), and resumes at any round with the
// noise of an uninterrupted run.
func TestBandedRegenerateIsO1Memory(t *testing.T) {
	const n, d, b = 20, 5, 6
	band, err := strategy.BandMF(context.Background(), strategy.Prefix(n), b, strategy.LBFGSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if BandedWidth(band) != b {
		t.Fatalf("BandedWidth %d, want %d", BandedWidth(band), b)
	}
	root := rng.New(8)
	store, _ := NoiseFor(band, root, d, Store)
	regen, _ := NoiseFor(band, root, d, Regenerate)
	if store.Bytes() != (b-1)*d*8 || regen.Bytes() != d*8 {
		t.Fatalf("bytes held: store %d (want %d), regenerate %d (want %d)", store.Bytes(), (b-1)*d*8, regen.Bytes(), d*8)
	}
	want := make([][]float64, n)
	for r := range want {
		want[r] = make([]float64, d)
		regen.Next(want[r], r)
	}
	if err := regen.Seek(13); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, d)
	for r := 13; r < n; r++ {
		regen.Next(got, r)
		if !slices.Equal(got, want[r]) {
			t.Fatalf("round %d after Seek(13) differs", r)
		}
	}
}

// TestBLTNoiseIsBuffered: a BLT's store-mode noise is the buffered source,
// holding its m buffers (m·d values) whatever the rounds, and it equals the
// materialized C⁻¹Z (TestNoiseMatchesMaterializedProduct covers the values;
// here n = 400 rounds, d = 3, to 1e-9).
func TestBLTNoiseIsBuffered(t *testing.T) {
	const n, d = 400, 3
	s, err := strategy.NewBLT(n, []float64{0.99, 0.7}, []float64{0.3, 0.2})
	if err != nil {
		t.Fatal(err)
	}
	src, err := NoiseFor(s, rng.New(5), d, Store)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.(*BLTNoise); !ok || src.Bytes() != 2*d*8 {
		t.Fatalf("source %T holding %d bytes", src, src.Bytes())
	}
	_, ci := s.Coefficients()
	z := latentMatrix(rng.New(5), "noise", n, d)
	row := make([]float64, d)
	for r := 0; r < n; r++ {
		if err := src.Next(row, r); err != nil {
			t.Fatal(err)
		}
		for c := 0; c < d; c++ {
			want := 0.0
			for j := 0; j <= r; j++ {
				want += ci[r-j] * z.At(j, c)
			}
			if math.Abs(row[c]-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("round %d: streamed %v, C⁻¹Z %v", r, row[c], want)
			}
		}
	}
}

// TestAxpy8AVX2BitIdentical: axpy8 (the AVX2 kernel on amd64, then the
// loop for the tail) equals the pure-Go loop bit for bit, at lengths that
// are and are not multiples of the kernel's 16 coordinates, with values of
// very different magnitudes (so that a fused multiply-add or another
// summation order would show), subnormals, infinities and NaN.
func TestAxpy8AVX2BitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	val := func() float64 {
		switch r.IntN(40) {
		case 0:
			return math.SmallestNonzeroFloat64 * float64(r.IntN(9))
		case 1:
			return math.Inf(1 - 2*r.IntN(2))
		case 2:
			return math.NaN()
		}
		return r.NormFloat64() * math.Pow(2, float64(r.IntN(120)-60))
	}
	for _, m := range []int{0, 1, 15, 16, 17, 31, 32, 100, 1000, 4096} {
		var x [8][]float64
		for k := range x {
			x[k] = make([]float64, m+3) // longer than dst, as rows are
			for i := range x[k] {
				x[k][i] = val()
			}
		}
		a := make([]float64, 8)
		for k := range a {
			a[k] = val()
		}
		a[3] = 1e-300 // products that underflow
		got, want := make([]float64, m), make([]float64, m)
		for i := range got {
			got[i] = val()
			want[i] = got[i]
		}
		axpy8(got, a, x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7])
		axpy8Go(want, a, x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7])
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
				t.Fatalf("m = %d, coordinate %d: %v (%x), want %v (%x) (AVX2 kernel: %v)", m, i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]), useAVX2)
			}
		}
	}
	t.Logf("AVX2 kernel in use: %v", useAVX2)
}

// bandLower is an n × n lower-triangular weight matrix with `width`
// nonzero diagonals (width = n: dense, as C⁻¹ of optimal MF) and
// irregular values, a few of them zero (skipped terms).
func bandLower(n, width int) *mat.Dense {
	w := mat.NewDense(n, n, nil)
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < n; i++ {
		for j := max(0, i-width+1); j <= i; j++ {
			if r.IntN(17) != 0 {
				w.Set(i, j, r.NormFloat64())
			}
		}
	}
	return w
}

// TestLinearBatchedIsOneRound: a Store source whose rows combine many
// latents computes linearBatch rounds per pass (blocked, 8-term fused);
// its noise is bit-identical to Regenerate mode's one-round loop (one axpy
// per term) for a dense W and a banded one whose latents are released, at
// a dimension that is not a multiple of the block or of 16, over a round
// count that ends in a partial batch, straight and after Seek to rounds
// inside batches; the latents it holds stay within PeakLatents. Negative
// control: the same terms summed in the reverse order differ in some bit.
func TestLinearBatchedIsOneRound(t *testing.T) {
	const n, d = 3*linearBatch + 7, linearBlock + 1001
	for _, width := range []int{n, linearDense + 5} {
		w := bandLower(n, width)
		store := NewLinear(w, "noise", rng.New(8), d, Store)
		regen := NewLinear(w, "noise", rng.New(8), d, Regenerate)
		if store.batch != linearBatch || regen.batch != 1 {
			t.Fatalf("width %d: batch %d (store), %d (regenerate)", width, store.batch, regen.batch)
		}
		straight := make([][]float64, n)
		for tt := range straight {
			straight[tt] = make([]float64, d)
			want := make([]float64, d)
			if err := store.Next(straight[tt], tt); err != nil {
				t.Fatal(err)
			}
			if err := regen.Next(want, tt); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(straight[tt], want) {
				t.Fatalf("width %d: round %d: batched store differs from the one-round loop", width, tt)
			}
		}
		if store.peak > store.PeakLatents() || store.Bytes() > int64(store.PeakLatents()+store.Outputs())*d*8 {
			t.Fatalf("width %d: held %d latents (%d bytes), PeakLatents %d + Outputs %d", width, store.peak, store.Bytes(), store.PeakLatents(), store.Outputs())
		}
		if width < n && store.PeakLatents() > width+2*linearBatch {
			t.Fatalf("width %d: PeakLatents %d: latents are not released", width, store.PeakLatents())
		}
		for _, k := range []int{linearBatch + 5, 2 * linearBatch, n - 1} {
			if err := store.Seek(k); err != nil {
				t.Fatal(err)
			}
			got := make([]float64, d)
			for tt := k; tt < n; tt++ {
				if err := store.Next(got, tt); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, straight[tt]) {
					t.Fatalf("width %d: round %d after Seek(%d) differs", width, tt, k)
				}
			}
		}
		// Negative control: round n−1's terms in reverse order.
		rev := make([]float64, d)
		z := make([]float64, d)
		l := newLatents(rng.New(8), "noise")
		for j := n - 1; j >= 0; j-- {
			if a := w.At(n-1, j); a != 0 {
				l.fill(z, j)
				axpy(rev, a, z)
			}
		}
		if slices.Equal(rev, straight[n-1]) {
			t.Fatalf("width %d: negative control: the reversed sum is bit-identical", width)
		}
	}
}

// TestNoiseVectorsEstimate: the memory estimate for a dense mechanism
// (optimal MF) is what its store-mode source holds at its peak, latents and
// batch outputs, below and above the batching threshold.
func TestNoiseVectorsEstimate(t *testing.T) {
	for _, n := range []int{linearDense - 1, linearDense, 3*linearBatch + 7} {
		w := mat.NewDense(n, n, nil)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				w.Set(i, j, 1/float64(i-j+1))
			}
		}
		src := NewLinear(w, "noise", rng.New(1), 3, Store)
		held := src.PeakLatents() + src.Outputs()
		c := Config{Kind: "optimal-mf"}
		if got := c.NoiseVectors(n, 0); got != float64(held) {
			t.Errorf("%d rounds: estimate %v vectors, the source holds %d", n, got, held)
		}
	}
}
