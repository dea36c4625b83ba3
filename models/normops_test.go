package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// normRef is the norm and its gradients in float64 from the definitions:
// per (row, group) the mean and biased variance, x̂ = (x − mean)/σ with
// σ = sqrt(var + eps), y = gain·x̂ + bias; dx = (ĝ − mean(ĝ) − x̂·mean(ĝ·x̂))/σ
// with ĝ = g·gain, dgain = Σ g·x̂ and dbias = Σ g per channel.
func normRef(o norm, x, gain, bias, g []float32, unbiased bool) (y, dx, dgain, dbias []float64) {
	n := o.feat / o.groups
	y, dx = make([]float64, len(x)), make([]float64, len(x))
	dgain, dbias = make([]float64, o.ch), make([]float64, o.ch)
	cg := o.ch / o.groups
	for r := 0; r < o.rows; r++ {
		for k := 0; k < o.groups; k++ {
			var idx []int
			for i := r * o.feat; i < (r+1)*o.feat; i++ {
				if (i-r*o.feat)%o.ch/cg == k {
					idx = append(idx, i)
				}
			}
			var mean, v, mg, mgx float64
			for _, i := range idx {
				mean += float64(x[i])
			}
			mean /= float64(n)
			for _, i := range idx {
				v += (float64(x[i]) - mean) * (float64(x[i]) - mean)
			}
			if unbiased {
				v /= float64(n - 1)
			} else {
				v /= float64(n)
			}
			sd := math.Sqrt(v + normEps)
			xh := map[int]float64{}
			for _, i := range idx {
				c := (i - r*o.feat) % o.ch
				xh[i] = (float64(x[i]) - mean) / sd
				y[i] = float64(gain[c])*xh[i] + float64(bias[c])
				gh := float64(g[i]) * float64(gain[c])
				mg += gh
				mgx += gh * xh[i]
				dgain[c] += float64(g[i]) * xh[i]
				dbias[c] += float64(g[i])
			}
			for _, i := range idx {
				c := (i - r*o.feat) % o.ch
				gh := float64(g[i]) * float64(gain[c])
				dx[i] = (gh - mg/float64(n) - xh[i]*mgx/float64(n)) / sd
			}
		}
	}
	return y, dx, dgain, dbias
}

// TestNormMatchesFloat64: layer norm (widths 128 and 100) and group norm
// (8 and 16 channels in 2 and 4 groups, 12 channels in 3) against the
// float64 definitions, on inputs with a mean far from 0 (1000 ± 1, where a
// one-pass variance would cancel) and of order 1: every output and
// gradient within 4 float32 ulps of its scale (2.4e-7 relative to the
// largest magnitude of its kind), the gain's and bias's gradients within
// 1e-6 relative. Negative control: the unbiased variance (a 0.4%–1%
// change for these group sizes) fails the same tolerance.
func TestNormMatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct{ rows, feat, ch, groups int }{
		{6, 128, 128, 1}, {5, 100, 100, 1}, {3, 8 * 49, 8, 2}, {3, 16 * 25, 16, 4}, {2, 12 * 9, 12, 3},
	} {
		for _, offset := range []float64{0, 1000} {
			o := norm{c.rows, c.feat, c.ch, c.groups, new(normState)}
			x, g := make([]float32, c.rows*c.feat), make([]float32, c.rows*c.feat)
			for i := range x {
				x[i] = float32(offset + r.NormFloat64())
				g[i] = float32(r.NormFloat64())
			}
			gain, bias := make([]float32, c.ch), make([]float32, c.ch)
			for i := range gain {
				gain[i], bias[i] = float32(1+0.3*r.NormFloat64()), float32(0.3*r.NormFloat64())
			}
			y, dx := make([]float32, len(x)), make([]float32, len(x))
			dgain, dbias := make([]float32, c.ch), make([]float32, c.ch)
			o.run(y, [][]float32{x, gain, bias})
			normGradX(o).run(dx, [][]float32{g, gain})
			normGradAffine{o, true}.run(dgain, [][]float32{g})
			normGradAffine{o, false}.run(dbias, [][]float32{g})
			for _, unbiased := range []bool{false, true} {
				wy, wdx, wdg, wdb := normRef(o, x, gain, bias, g, unbiased)
				worst := 0.0
				for _, p := range []struct {
					got  []float32
					want []float64
					rel  float64
				}{{y, wy, 4 * 0x1p-24}, {dx, wdx, 4 * 0x1p-24}, {dgain, wdg, 1e-6}, {dbias, wdb, 1e-6}} {
					scale := 0.0
					for _, v := range p.want {
						scale = max(scale, math.Abs(v))
					}
					for i, v := range p.got {
						worst = max(worst, math.Abs(float64(v)-p.want[i])/(p.rel*scale))
					}
				}
				if !unbiased {
					t.Logf("%+v offset %g: worst error %.3f× the tolerance", c, offset, worst)
				}
				switch {
				case !unbiased && worst > 1:
					t.Errorf("%+v offset %g: error %.2f× the tolerance", c, offset, worst)
				case unbiased && worst <= 1:
					t.Errorf("%+v offset %g: negative control (unbiased variance) within tolerance (%.2f×)", c, offset, worst)
				}
			}
		}
	}
}
