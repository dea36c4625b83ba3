package models

import (
	"fmt"
	"math"

	"dpfl/models/internal/vec"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Normalization and average-pooling ops of the layer lists.
//
// norm normalizes each row's values by group and applies a per-channel
// affine map: value i of a row (NHWC) is channel i mod C, in group
// (i mod C)/(C/G); each group is shifted by its mean and scaled by
// 1/sqrt(var + eps) (the biased variance, as PyTorch's), then channel ch
// gets gain[ch]·x̂ + bias[ch]. Layer norm is C = the row's width and G = 1
// (PyTorch's LayerNorm over the last dimension); group norm is C = an
// image's channels and G groups (PyTorch's GroupNorm on NCHW maps, here
// NHWC).
//
// The loops are package vec's periodic kernels: value i of a row uses slot
// i mod t of per-slot arrays, t = lcm(C, 32) (a multiple of C, so a slot is
// always one channel and one group; 32 for the statistics of layer norm,
// whose one group needs no channel). The statistics are two passes (the
// mean, then the squared deviations from it), accumulated in float64 per
// slot and then per group in slot order; x̂ is computed in float64 and
// rounded once. The gradients' sums (per group, and the gain's and bias's
// per channel over the batch) are float64 as well. The results depend on t
// through the order of the float64 sums only (relative differences of order
// 1e-16 before the float32 rounding).
type norm struct {
	rows, feat, ch, groups int
	st                     *normState
}

// normState is what the forward pass keeps for the gradient, x̂ and each
// (row, group)'s 1/sqrt(var + eps), and the kernels' per-slot arrays.
type normState struct {
	xhat []float32
	rstd []float64
	sl   *normSlots
}

// normSlots are the per-slot arrays: ts slots for the statistics, tc for
// the channels' parameters and sums.
type normSlots struct {
	ts, tc     int
	grp        []int     // each statistics slot's group
	s0, s1     []float64 // ts: per-row sums
	m, b, r    []float64 // ts: each slot's group's mean (or mean of ĝ), mean of ĝ·x̂, 1/σ
	gain, bias []float32 // tc: the parameters repeated
	c0, c1     []float64 // tc: the parameters' gradient sums
}

// normEps is added to the variance.
const normEps = 1e-5

// normalize adds the norm of x [rows, feat] with gain and bias [ch] to the
// graph.
func normalize(x, gain, bias *G.Node, ch, groups int) (*G.Node, error) {
	xs := x.Shape()
	if len(xs) != 2 || xs[1]%ch != 0 || ch%groups != 0 || !gain.Shape().Eq(tensor.Shape{ch}) || !bias.Shape().Eq(tensor.Shape{ch}) {
		return nil, fmt.Errorf("models: norm of x %v, gain %v, bias %v in %d groups of %d channels", xs, gain.Shape(), bias.Shape(), groups, ch)
	}
	return apply(norm{xs[0], xs[1], ch, groups, new(normState)}, x, gain, bias)
}

func (o norm) name() string {
	return fmt.Sprintf("norm(%dx%d,C%d,G%d)@%p", o.rows, o.feat, o.ch, o.groups, o.st)
}
func (o norm) shape() tensor.Shape { return tensor.Shape{o.rows, o.feat} }
func (o norm) diffWRT() []bool     { return []bool{true, true, true} }

// slots returns the per-slot arrays (made on first use) with the gain and
// bias repeated over tc slots (bias may be nil).
func (o norm) slots(gain, bias []float32) *normSlots {
	sl := o.st.sl
	if sl == nil {
		tc := o.ch * 32 / gcd(o.ch, 32)
		ts := tc
		if o.groups == 1 {
			ts = 32
		}
		sl = &normSlots{ts: ts, tc: tc, grp: make([]int, ts),
			s0: make([]float64, ts), s1: make([]float64, ts), m: make([]float64, ts), b: make([]float64, ts), r: make([]float64, ts),
			gain: make([]float32, tc), bias: make([]float32, tc), c0: make([]float64, tc), c1: make([]float64, tc)}
		for s := range sl.grp {
			sl.grp[s] = s % o.ch / (o.ch / o.groups)
		}
		o.st.sl = sl
	}
	for s := 0; s < sl.tc; s += o.ch {
		copy(sl.gain[s:s+o.ch], gain)
		if bias != nil {
			copy(sl.bias[s:s+o.ch], bias)
		}
	}
	return sl
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// groupSums sets dst[g] to the sum of the slots of group g, in slot order
// (with one group, as four interleaved partial sums ((s0+s1)+(s2+s3)), so
// the additions overlap).
func (sl *normSlots) groupSums(dst, s []float64) {
	if len(dst) == 1 && len(s)%4 == 0 {
		var s0, s1, s2, s3 float64
		for i := 0; i < len(s); i += 4 {
			s0 += s[i]
			s1 += s[i+1]
			s2 += s[i+2]
			s3 += s[i+3]
		}
		dst[0] = (s0 + s1) + (s2 + s3)
		return
	}
	clear(dst)
	for i, v := range s {
		dst[sl.grp[i]] += v
	}
}

// spread sets dst[s] to v[s's group]/n.
func (sl *normSlots) spread(dst, v []float64, n float64) {
	for i := range dst {
		dst[i] = v[sl.grp[i]] / n
	}
}

func (o norm) run(y []float32, in [][]float32) {
	x, gain, bias := in[0], in[1], in[2]
	st := o.st
	if st.xhat == nil {
		st.xhat, st.rstd = make([]float32, o.rows*o.feat), make([]float64, o.rows*o.groups)
	}
	sl := o.slots(gain, bias)
	n := float64(o.feat / o.groups)
	var mean, sq [maxGroups]float64
	for r := 0; r < o.rows; r++ {
		row, xh := x[r*o.feat:(r+1)*o.feat], st.xhat[r*o.feat:(r+1)*o.feat]
		clear(sl.s0)
		vec.SumP(sl.s0, row)
		sl.groupSums(mean[:o.groups], sl.s0)
		sl.spread(sl.m, mean[:o.groups], n)
		clear(sl.s1)
		vec.SumSqDevP(sl.s1, sl.m, row)
		sl.groupSums(sq[:o.groups], sl.s1)
		rs := st.rstd[r*o.groups : (r+1)*o.groups]
		for g := range rs {
			rs[g] = 1 / math.Sqrt(sq[g]/n+normEps)
		}
		sl.spread(sl.r, rs, 1)
		vec.NormP(xh, row, sl.m, sl.r)
	}
	vec.AffineP(y, st.xhat, sl.gain, sl.bias)
}

// maxGroups bounds the groups of a norm (validated with the layer).
const maxGroups = 1024

func (o norm) symDiff(in G.Nodes, _, g *G.Node) (G.Nodes, error) {
	dx, err := apply(normGradX(o), g, in[1])
	if err != nil {
		return nil, err
	}
	dgain, err := apply(normGradAffine{o, true}, g)
	if err != nil {
		return nil, err
	}
	dbias, err := apply(normGradAffine{o, false}, g)
	return G.Nodes{dx, dgain, dbias}, err
}

// normGradX is dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) per group, ĝ = g·gain.
type normGradX norm

func (o normGradX) name() string {
	return fmt.Sprintf("normGradX(%dx%d,C%d,G%d)@%p", o.rows, o.feat, o.ch, o.groups, o.st)
}
func (o normGradX) shape() tensor.Shape { return tensor.Shape{o.rows, o.feat} }
func (o normGradX) run(dx []float32, in [][]float32) {
	g, gain := in[0], in[1]
	sl := norm(o).slots(gain, nil)
	n := float64(o.feat / o.groups)
	var mg, mgx [maxGroups]float64
	for r := 0; r < o.rows; r++ {
		gr, xh, d := g[r*o.feat:(r+1)*o.feat], o.st.xhat[r*o.feat:(r+1)*o.feat], dx[r*o.feat:(r+1)*o.feat]
		clear(sl.s0)
		clear(sl.s1)
		vec.DotsP(sl.s0, sl.s1, gr, sl.gain, xh)
		sl.groupSums(mg[:o.groups], sl.s0)
		sl.groupSums(mgx[:o.groups], sl.s1)
		sl.spread(sl.m, mg[:o.groups], n)
		sl.spread(sl.b, mgx[:o.groups], n)
		sl.spread(sl.r, o.st.rstd[r*o.groups:(r+1)*o.groups], 1)
		vec.GradXP(d, gr, sl.gain, xh, sl.m, sl.b, sl.r)
	}
}

// normGradAffine is the gain's gradient Σ g·x̂ (gain) or the bias's Σ g
// per channel, over rows and positions (float64 sums per slot, then per
// channel in slot order).
type normGradAffine struct {
	norm
	gain bool
}

func (o normGradAffine) name() string {
	return fmt.Sprintf("normGradAffine(%dx%d,C%d,G%d,%v)@%p", o.rows, o.feat, o.ch, o.groups, o.gain, o.st)
}
func (o normGradAffine) shape() tensor.Shape { return tensor.Shape{o.ch} }
func (o normGradAffine) run(d []float32, in [][]float32) {
	g := in[0]
	sl := o.st.sl // the forward pass made it
	clear(sl.c0)
	acc := sl.c0
	if o.gain {
		clear(sl.c1)
		vec.SumProdP(sl.c0, sl.c1, g, o.st.xhat)
		acc = sl.c1
	} else {
		vec.SumP(sl.c0, g)
	}
	for c := range d {
		var s float64
		for k := c; k < sl.tc; k += o.ch {
			s += acc[k]
		}
		d[c] = float32(s)
	}
}

// avgPool is k×k average-pooling with stride s of NHWC maps [batch, h·w·c]
// (no padding; windows that do not fit are dropped).
type avgPool struct{ batch, h, w, c, k, s int }

func (o avgPool) oh() int { return (o.h-o.k)/o.s + 1 }
func (o avgPool) ow() int { return (o.w-o.k)/o.s + 1 }

// averagePool adds the pooling of x to its graph.
func averagePool(x *G.Node, p avgPool) (*G.Node, error) {
	if !x.Shape().Eq(tensor.Shape{p.batch, p.h * p.w * p.c}) || p.k < 1 || p.s < 1 || p.k > p.h || p.k > p.w {
		return nil, fmt.Errorf("models: %d×%d average-pool of %dx%dx%d maps given %v", p.k, p.k, p.h, p.w, p.c, x.Shape())
	}
	return apply(p, x)
}

func (o avgPool) name() string {
	return fmt.Sprintf("avgpool(%dx%dx%dx%d,k%d,s%d)", o.batch, o.h, o.w, o.c, o.k, o.s)
}
func (o avgPool) shape() tensor.Shape { return tensor.Shape{o.batch, o.oh() * o.ow() * o.c} }
func (o avgPool) diffWRT() []bool     { return []bool{true} }

// run adds each window's rows of k pixels (k·c contiguous values) into its
// output with vec.SumRows, in window order (as each output's sum is
// defined), then scales.
func (o avgPool) run(y []float32, in [][]float32) {
	x, inv := in[0], 1/float32(o.k*o.k)
	oh, ow, C := o.oh(), o.ow(), o.c
	clear(y)
	for e := 0; e < o.batch; e++ {
		for py := 0; py < oh; py++ {
			for px := 0; px < ow; px++ {
				out := y[((e*oh+py)*ow+px)*C:][:C]
				for i := 0; i < o.k; i++ {
					src := ((e*o.h+py*o.s+i)*o.w + px*o.s) * C
					vec.SumRows(out, x[src:src+o.k*C])
				}
			}
		}
	}
	vec.Scale(y, inv, y)
}

func (o avgPool) symDiff(_ G.Nodes, _, g *G.Node) (G.Nodes, error) {
	dx, err := apply(avgPoolGrad(o), g)
	return G.Nodes{dx}, err
}

// avgPoolGrad spreads each output's gradient evenly over its window (the
// outputs in order, each window's pixels in order).
type avgPoolGrad avgPool

func (o avgPoolGrad) name() string        { return "grad" + avgPool(o).name() }
func (o avgPoolGrad) shape() tensor.Shape { return tensor.Shape{o.batch, o.h * o.w * o.c} }
func (o avgPoolGrad) run(dx []float32, in [][]float32) {
	g, inv := in[0], 1/float32(o.k*o.k)
	oh, ow, C := avgPool(o).oh(), avgPool(o).ow(), o.c
	clear(dx)
	for e := 0; e < o.batch; e++ {
		for py := 0; py < oh; py++ {
			for px := 0; px < ow; px++ {
				gout := g[((e*oh+py)*ow+px)*C:][:C]
				for i := 0; i < o.k; i++ {
					for j := 0; j < o.k; j++ {
						src := ((e*o.h+py*o.s+i)*o.w + px*o.s + j) * C
						vec.Axpy(dx[src:src+C], inv, gout)
					}
				}
			}
		}
	}
}
