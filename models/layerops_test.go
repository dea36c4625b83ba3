package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// opCase is one new op under a finite-difference check of its gradient
// kernels: the loss L = Σ g·f(inputs) for a fixed random g, its gradient
// with respect to each differentiated input from the op's gradient kernels,
// against central differences of L (computed from the float32 forward
// kernel, summed in float64).
type opCase struct {
	name  string
	sizes []int // the inputs' sizes
	diff  []bool
	fwd   func(out []float32, in [][]float32)
	outN  int
	// grads writes dL/d(input k) for the differentiated inputs.
	grads func(g []float32, in [][]float32) [][]float32
}

func layerOpCases() []opCase {
	const rows, h, w, c = 3, 4, 6, 4
	shp := []int{rows, h * w * c}
	n := rows * h * w * c
	ln := norm{rows, h * w * c, h * w * c, 1, new(normState)}
	gn := norm{rows, h * w * c, c, 2, new(normState)}
	normCase := func(name string, o norm) opCase {
		return opCase{name: name, sizes: []int{n, o.ch, o.ch}, diff: []bool{true, true, true}, outN: n, fwd: o.run,
			grads: func(g []float32, in [][]float32) [][]float32 {
				out := make([]float32, n)
				o.run(out, in) // the state the gradient reads
				dx, dg, db := make([]float32, n), make([]float32, o.ch), make([]float32, o.ch)
				normGradX(o).run(dx, [][]float32{g, in[1]})
				normGradAffine{o, true}.run(dg, [][]float32{g})
				normGradAffine{o, false}.run(db, [][]float32{g})
				return [][]float32{dx, dg, db}
			}}
	}
	ap := avgPool{batch: rows, h: h, w: w, c: c, k: 3, s: 2}
	gap := avgPool{batch: rows, h: 5, w: 5, c: c, k: 5, s: 5} // global-avg-pool of 5×5 images
	_ = shp
	const T, B, D, H = 5, 2, 6, 2
	att := attention{T, B, D, H, new(attnState)}
	pos := posAdd{T, B, D}
	return []opCase{
		{name: "attention", sizes: []int{T * B * 3 * D}, diff: []bool{true}, outN: T * B * D, fwd: att.run,
			grads: func(g []float32, in [][]float32) [][]float32 {
				out, d := make([]float32, T*B*D), make([]float32, T*B*3*D)
				att.run(out, in)
				attnGrad(att).run(d, [][]float32{in[0], g})
				return [][]float32{d}
			}},
		{name: "pos-embedding", sizes: []int{T * B * D, T * D}, diff: []bool{true, true}, outN: T * B * D, fwd: pos.run,
			grads: func(g []float32, in [][]float32) [][]float32 {
				d := make([]float32, T*D)
				posGrad(pos).run(d, [][]float32{g})
				return [][]float32{g, d}
			}},
		{name: "gelu", sizes: []int{n}, diff: []bool{true}, outN: n, fwd: gelu{}.run,
			grads: func(g []float32, in [][]float32) [][]float32 {
				d := make([]float32, n)
				geluGrad{}.run(d, [][]float32{in[0], g})
				return [][]float32{d}
			}},
		{name: "tanh", sizes: []int{n}, diff: []bool{true}, outN: n, fwd: tanhOp{}.run,
			grads: func(g []float32, in [][]float32) [][]float32 {
				y, d := make([]float32, n), make([]float32, n)
				tanhOp{}.run(y, in)
				tanhGrad{}.run(d, [][]float32{y, g})
				return [][]float32{d}
			}},
		{name: "sum", sizes: []int{n, n}, diff: []bool{true, true}, outN: n, fwd: sum{}.run,
			grads: func(g []float32, in [][]float32) [][]float32 { return [][]float32{g, g} }},
		normCase("layer-norm", ln),
		normCase("group-norm", gn),
		{name: "avg-pool", sizes: []int{n}, diff: []bool{true}, outN: rows * ap.oh() * ap.ow() * c, fwd: ap.run,
			grads: func(g []float32, in [][]float32) [][]float32 {
				d := make([]float32, n)
				avgPoolGrad(ap).run(d, [][]float32{g})
				return [][]float32{d}
			}},
		{name: "global-avg-pool", sizes: []int{rows * 25 * c}, diff: []bool{true}, outN: rows * c, fwd: gap.run,
			grads: func(g []float32, in [][]float32) [][]float32 {
				d := make([]float32, rows*25*c)
				avgPoolGrad(gap).run(d, [][]float32{g})
				return [][]float32{d}
			}},
	}
}

// TestLayerOpsFiniteDifferences checks every new op's gradient kernels
// against central differences (step 1e-2 on inputs of order 1; tolerance
// 1e-3 absolute plus 1% of the difference: the float32 forward pass's
// rounding over the step). Negative control: a gradient scaled by 1.05
// fails the same check.
func TestLayerOpsFiniteDifferences(t *testing.T) {
	const step, absTol, relTol = 1e-2, 1e-3, 0.01
	for _, tc := range layerOpCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(21, 22))
			in := make([][]float32, len(tc.sizes))
			for k, s := range tc.sizes {
				in[k] = make([]float32, s)
				for i := range in[k] {
					in[k][i] = float32(r.NormFloat64())
				}
			}
			g := make([]float32, tc.outN)
			for i := range g {
				g[i] = float32(r.NormFloat64())
			}
			out := make([]float32, tc.outN)
			loss := func() float64 {
				tc.fwd(out, in)
				var l float64
				for i, v := range out {
					l += float64(g[i]) * float64(v)
				}
				return l
			}
			grads := tc.grads(g, in)
			bad := [2]int{}
			checked := 0
			for k := range in {
				if !tc.diff[k] {
					continue
				}
				for i := range in[k] {
					old := in[k][i]
					in[k][i] = old + step
					up := loss()
					in[k][i] = old - step
					down := loss()
					in[k][i] = old
					fd := (up - down) / (2 * step)
					for j, scale := range []float64{1, 1.05} {
						if math.Abs(scale*float64(grads[k][i])-fd) > absTol+relTol*math.Abs(fd) {
							bad[j]++
						}
					}
					checked++
				}
			}
			if bad[0] > 0 {
				t.Errorf("%d of %d coordinates outside tolerance", bad[0], checked)
			}
			if bad[1] < checked/4 {
				t.Errorf("negative control: a gradient off by 5%% fails only %d of %d coordinates", bad[1], checked)
			}
		})
	}
}
