package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"dpfl/models/internal/vec"
)

// naiveAttention is attention and its gradient as plain loops over the
// tokens, heads and steps (each dot product and sum in order, every
// product rounded before it is added): the reference the ops must match
// bit for bit (reversed: the dot products summed from the last coordinate,
// the negative control).
func naiveAttention(o attention, qkv, dy []float32, reversed bool) (out, d []float32) {
	T, dh := o.seq, o.width/o.heads
	scale := float32(1 / math.Sqrt(float64(dh)))
	vecs := func(x []float32, t, b, h int) (q, k, v []float32) {
		row := x[(t*o.batch+b)*3*o.width:]
		return row[h*dh : (h+1)*dh], row[o.width+h*dh : o.width+(h+1)*dh], row[2*o.width+h*dh : 2*o.width+(h+1)*dh]
	}
	dot := func(a, b []float32) float32 {
		var s float32
		for i := range a {
			if reversed {
				i = len(a) - 1 - i
			}
			s += float32(a[i] * b[i])
		}
		return s
	}
	out, d = make([]float32, T*o.batch*o.width), make([]float32, len(qkv))
	P := make([]float32, T)
	for b := 0; b < o.batch; b++ {
		for h := 0; h < o.heads; h++ {
			probs := make([][]float32, T)
			for t := 0; t < T; t++ {
				q, _, _ := vecs(qkv, t, b, h)
				p := make([]float32, t+1)
				mx := float32(math.Inf(-1))
				for s := range p {
					_, k, _ := vecs(qkv, s, b, h)
					p[s] = dot(q, k) * scale
					mx = max(mx, p[s])
				}
				vec.Exp(p, p, mx)
				inv := float32(1 / vec.Sum(p))
				y := out[(t*o.batch+b)*o.width+h*dh:][:dh]
				for s := range p {
					p[s] *= inv
					_, _, v := vecs(qkv, s, b, h)
					vec.Axpy(y, p[s], v)
				}
				probs[t] = p
			}
			for t := 0; t < T; t++ {
				p, g := probs[t], dy[(t*o.batch+b)*o.width+h*dh:][:dh]
				q, _, _ := vecs(qkv, t, b, h)
				dq, _, _ := vecs(d, t, b, h)
				var mean float32
				for s := range p {
					_, _, v := vecs(qkv, s, b, h)
					P[s] = dot(g, v)
					mean += float32(p[s] * P[s])
				}
				for s := range p {
					_, k, _ := vecs(qkv, s, b, h)
					_, dk, dv := vecs(d, s, b, h)
					ds := float32(p[s]*(P[s]-mean)) * scale
					vec.Axpy(dq, ds, k)
					vec.Axpy(dk, ds, q)
					vec.Axpy(dv, p[s], g)
				}
			}
		}
	}
	return out, d
}

// TestAttentionMatchesNaive: the attention op and its gradient give the
// plain loops' bits, for heads of 32 (the vector kernels' full blocks)
// and of 3 (their tails), over sequences longer and shorter than 8.
// Negative control: the loops with the dot products summed in reverse
// order differ somewhere.
func TestAttentionMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct{ seq, batch, width, heads int }{{20, 3, 128, 4}, {5, 2, 6, 2}, {9, 1, 64, 1}} {
		o := attention{c.seq, c.batch, c.width, c.heads, new(attnState)}
		qkv, dy := make([]float32, c.seq*c.batch*3*c.width), make([]float32, c.seq*c.batch*c.width)
		for i := range qkv {
			qkv[i] = float32(r.NormFloat64())
		}
		for i := range dy {
			dy[i] = float32(r.NormFloat64())
		}
		out, d := make([]float32, len(dy)), make([]float32, len(qkv))
		o.run(out, [][]float32{qkv})
		attnGrad(o).run(d, [][]float32{qkv, dy})
		wantOut, wantD := naiveAttention(o, qkv, dy, false)
		for name, pair := range map[string][2][]float32{"output": {out, wantOut}, "gradient": {d, wantD}} {
			for i := range pair[0] {
				if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
					t.Fatalf("%+v: %s element %d is %g, the loops give %g", c, name, i, pair[0][i], pair[1][i])
				}
			}
		}
		revOut, revD := naiveAttention(o, qkv, dy, true)
		same := true
		for i := range out {
			same = same && out[i] == revOut[i]
		}
		for i := range d {
			same = same && d[i] == revD[i]
		}
		if same && c.width/c.heads > 2 {
			t.Fatalf("%+v: negative control: dot products in reverse order give the same bits", c)
		}
	}
}

// BenchmarkAttention: the benchmark transformer's attention (20 steps,
// width 128, 4 heads, batch 64), forward and gradient.
func BenchmarkAttention(b *testing.B) {
	o := attention{20, 64, 128, 4, new(attnState)}
	r := rand.New(rand.NewPCG(1, 2))
	qkv, dy := make([]float32, 20*64*3*128), make([]float32, 20*64*128)
	for i := range qkv {
		qkv[i] = float32(r.NormFloat64())
	}
	for i := range dy {
		dy[i] = float32(r.NormFloat64())
	}
	out, d := make([]float32, len(dy)), make([]float32, len(qkv))
	b.Run("forward", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			o.run(out, [][]float32{qkv})
		}
	})
	b.Run("gradient", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			attnGrad(o).run(d, [][]float32{qkv, dy})
		}
	})
}
