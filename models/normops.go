package models

import (
	"fmt"
	"math"

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
// NHWC). The statistics are accumulated in float64.
type norm struct {
	rows, feat, ch, groups int
	st                     *normState
}

// normState is what the forward pass keeps for the gradient: x̂ and each
// (row, group)'s 1/sqrt(var + eps).
type normState struct {
	xhat []float32
	rstd []float64
	grp  []int // each channel's group
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

// groupOf returns each channel's group (made on first use; the loops walk
// a row's values as positions × channels, so no value needs a division).
func (o norm) groupOf() []int {
	if o.st.grp == nil {
		o.st.grp = make([]int, o.ch)
		for c := range o.st.grp {
			o.st.grp[c] = c / (o.ch / o.groups)
		}
	}
	return o.st.grp
}

func (o norm) run(y []float32, in [][]float32) {
	x, gain, bias := in[0], in[1], in[2]
	st := o.st
	if st.xhat == nil {
		st.xhat, st.rstd = make([]float32, o.rows*o.feat), make([]float64, o.rows*o.groups)
	}
	grp := o.groupOf()
	n := float64(o.feat / o.groups)
	var sum, sq [maxGroups]float64
	for r := 0; r < o.rows; r++ {
		row, xh, out := x[r*o.feat:(r+1)*o.feat], st.xhat[r*o.feat:(r+1)*o.feat], y[r*o.feat:(r+1)*o.feat]
		clear(sum[:o.groups])
		clear(sq[:o.groups])
		for p := 0; p < o.feat; p += o.ch {
			for c, v := range row[p : p+o.ch] {
				sum[grp[c]] += float64(v)
			}
		}
		for g := 0; g < o.groups; g++ {
			sum[g] /= n // the mean
		}
		for p := 0; p < o.feat; p += o.ch {
			for c, v := range row[p : p+o.ch] {
				d := float64(v) - sum[grp[c]]
				sq[grp[c]] += d * d
			}
		}
		rs := st.rstd[r*o.groups : (r+1)*o.groups]
		for g := range rs {
			rs[g] = 1 / math.Sqrt(sq[g]/n+normEps)
		}
		for p := 0; p < o.feat; p += o.ch {
			xp, op := xh[p:p+o.ch], out[p:p+o.ch]
			for c, v := range row[p : p+o.ch] {
				g := grp[c]
				xp[c] = float32((float64(v) - sum[g]) * rs[g])
				op[c] = gain[c]*xp[c] + bias[c]
			}
		}
	}
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
	grp := norm(o).groupOf()
	n := float64(o.feat / o.groups)
	var mg, mgx [maxGroups]float64
	for r := 0; r < o.rows; r++ {
		gr, xh, d := g[r*o.feat:(r+1)*o.feat], o.st.xhat[r*o.feat:(r+1)*o.feat], dx[r*o.feat:(r+1)*o.feat]
		clear(mg[:o.groups])
		clear(mgx[:o.groups])
		for p := 0; p < o.feat; p += o.ch {
			xp := xh[p : p+o.ch]
			for c, v := range gr[p : p+o.ch] {
				k, gh := grp[c], float64(v)*float64(gain[c])
				mg[k] += gh
				mgx[k] += gh * float64(xp[c])
			}
		}
		rs := o.st.rstd[r*o.groups : (r+1)*o.groups]
		for p := 0; p < o.feat; p += o.ch {
			xp, dp := xh[p:p+o.ch], d[p:p+o.ch]
			for c, v := range gr[p : p+o.ch] {
				k, gh := grp[c], float64(v)*float64(gain[c])
				dp[c] = float32(rs[k] * (gh - mg[k]/n - float64(xp[c])*mgx[k]/n))
			}
		}
	}
}

// normGradAffine is the gain's gradient Σ g·x̂ (gain) or the bias's Σ g
// per channel, over rows and positions.
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
	clear(d)
	for r := 0; r < o.rows; r++ {
		for p := r * o.feat; p < (r+1)*o.feat; p += o.ch {
			gp, xp := g[p:p+o.ch], o.st.xhat[p:p+o.ch]
			for c, v := range gp {
				if o.gain {
					v *= xp[c]
				}
				d[c] += v
			}
		}
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

// window calls f(out, in) for each output value and each input value of its
// window (in window order).
func (o avgPool) window(f func(out, in int)) {
	oh, ow, C := o.oh(), o.ow(), o.c
	for e := 0; e < o.batch; e++ {
		for py := 0; py < oh; py++ {
			for px := 0; px < ow; px++ {
				k := ((e*oh+py)*ow + px) * C
				for i := 0; i < o.k; i++ {
					for j := 0; j < o.k; j++ {
						src := ((e*o.h+py*o.s+i)*o.w + px*o.s + j) * C
						for c := 0; c < C; c++ {
							f(k+c, src+c)
						}
					}
				}
			}
		}
	}
}

func (o avgPool) run(y []float32, in [][]float32) {
	x, inv := in[0], 1/float32(o.k*o.k)
	clear(y)
	o.window(func(out, i int) { y[out] += x[i] })
	for i := range y {
		y[i] *= inv
	}
}

func (o avgPool) symDiff(_ G.Nodes, _, g *G.Node) (G.Nodes, error) {
	dx, err := apply(avgPoolGrad(o), g)
	return G.Nodes{dx}, err
}

// avgPoolGrad spreads each output's gradient evenly over its window.
type avgPoolGrad avgPool

func (o avgPoolGrad) name() string        { return "grad" + avgPool(o).name() }
func (o avgPoolGrad) shape() tensor.Shape { return tensor.Shape{o.batch, o.h * o.w * o.c} }
func (o avgPoolGrad) run(dx []float32, in [][]float32) {
	g, inv := in[0], 1/float32(o.k*o.k)
	clear(dx)
	avgPool(o).window(func(out, i int) { dx[i] += g[out] * inv })
}
