package vec

// Periodic kernels: the normalization layers' loops. A row is read in order
// and value i uses "slot" i mod t of a per-slot array of period t (a
// multiple of 8), so per-channel (or per-group) parameters and float64
// accumulators need no lookup per value: with t a multiple of the channel
// count, slot i mod t is always the same channel. Each slot's accumulator
// is one chain over its values in increasing i, whatever the vector width,
// so the assembly and the Go code give the same bits. Products that must
// not be fused are rounded explicitly (float64(x*y)), as the Go compiler
// fuses x*y + z on some architectures.
//
// Every function panics if a period is not a positive multiple of 8, or if
// an operand is shorter than the row (or a per-slot array than its period).

func period(t int) int {
	if t <= 0 || t%8 != 0 {
		panic("vec: period must be a positive multiple of 8")
	}
	return t
}

// SumP sets acc[i mod len(acc)] += x[i] (in float64).
func SumP(acc []float64, x []float32) {
	t := period(len(acc))
	i := sumPAsm(acc, x)
	for ; i < len(x); i++ {
		acc[i%t] += float64(x[i])
	}
}

// SumSqDevP sets acc[s] += (x[i] − mean[s])², s = i mod len(acc), in
// float64.
func SumSqDevP(acc, mean []float64, x []float32) {
	t := period(len(acc))
	mean = mean[:t]
	i := sumSqDevPAsm(acc, mean, x)
	for ; i < len(x); i++ {
		d := float64(x[i]) - mean[i%t]
		acc[i%t] += float64(d * d)
	}
}

// NormP sets dst[i] = (x[i] − mean[s])·scale[s], s = i mod len(mean), in
// float64 rounded once to float32.
func NormP(dst, x []float32, mean, scale []float64) {
	t := period(len(mean))
	x, scale = x[:len(dst)], scale[:t]
	i := normPAsm(dst, x, mean, scale)
	for ; i < len(dst); i++ {
		dst[i] = float32((float64(x[i]) - mean[i%t]) * scale[i%t])
	}
}

// AffineP sets dst[i] = gain[c]·x[i] + bias[c], c = i mod len(gain), in
// float32 (the product rounded, then the sum).
func AffineP(dst, x, gain, bias []float32) {
	t := period(len(gain))
	x, bias = x[:len(dst)], bias[:t]
	i := affinePAsm(dst, x, gain, bias)
	for ; i < len(dst); i++ {
		dst[i] = float32(gain[i%t]*x[i]) + bias[i%t]
	}
}

// SumProdP sets su[s] += u[i] and suv[s] += u[i]·v[i], s = i mod len(su),
// in float64 (where the product of two float32 values is exact).
func SumProdP(su, suv []float64, u, v []float32) {
	t := period(len(su))
	suv, v = suv[:t], v[:len(u)]
	i := sumProdPAsm(su, suv, u, v)
	for ; i < len(u); i++ {
		su[i%t] += float64(u[i])
		suv[i%t] += float64(u[i]) * float64(v[i])
	}
}

// DotsP sets, with h = g[i]·gain[i mod len(gain)] (exact in float64),
// sh[s] += h and shx[s] += h·x[i] (the product rounded), s = i mod
// len(sh): the per-slot sums of the gain-weighted gradient and of its
// products with x. The two periods may differ.
func DotsP(sh, shx []float64, g, gain, x []float32) {
	ts, tc := period(len(sh)), period(len(gain))
	shx, x = shx[:ts], x[:len(g)]
	i := dotsPAsm(sh, shx, g, gain, x)
	for ; i < len(g); i++ {
		h := float64(g[i]) * float64(gain[i%tc])
		sh[i%ts] += h
		shx[i%ts] += float64(h * float64(x[i]))
	}
}

// GradXP sets, with h = g[i]·gain[i mod len(gain)] (exact in float64),
// dst[i] = ((h − a[s]) − x[i]·b[s])·r[s], s = i mod len(a), in float64
// (each product rounded) rounded once to float32: the input gradient of a
// normalization, x the normalized values, a and b the means of h and of
// h·x over the value's group, r its 1/σ. The two periods may differ.
func GradXP(dst, g, gain, x []float32, a, b, r []float64) {
	ts, tc := period(len(a)), period(len(gain))
	g, x, b, r = g[:len(dst)], x[:len(dst)], b[:ts], r[:ts]
	i := gradXPAsm(dst, g, gain, x, a, b, r)
	for ; i < len(dst); i++ {
		s := i % ts
		h := float64(g[i]) * float64(gain[i%tc])
		dst[i] = float32(float64((h-a[s])-float64(float64(x[i])*b[s])) * r[s])
	}
}

// AddStrided sets dst[r·ds+k] += src[r·ss+k] for r < count and k < width:
// count runs of width values, ds and ss apart (ds ≥ width, so that the
// runs of dst do not overlap). It panics if ds < width or a run is out of
// range.
func AddStrided(dst []float32, ds int, src []float32, ss, width, count int) {
	if count <= 0 || width <= 0 {
		return
	}
	if ds < width || ss < 0 || len(dst) < (count-1)*ds+width || len(src) < (count-1)*ss+width {
		panic("vec: AddStrided out of range")
	}
	k0 := addStridedAsm(dst, ds, src, ss, width, count)
	if k0 == width {
		return
	}
	for r := 0; r < count; r++ {
		d, s := dst[r*ds+k0:r*ds+width], src[r*ss+k0:r*ss+width]
		for k := range d {
			d[k] += s[k]
		}
	}
}

// SumRows sets acc[i mod len(acc)] += x[i] in float32: the rows of x (of
// len(acc) values) added into acc one after another.
func SumRows(acc, x []float32) {
	t := len(acc)
	if t%8 != 0 || t > 64 { // wide rows: Add row by row
		r := 0
		for ; (r+1)*t <= len(x); r++ {
			Add(acc, x[r*t:(r+1)*t])
		}
		tail := x[r*t:]
		for i, v := range tail {
			acc[i] += v
		}
		return
	}
	i := sumRowsAsm(acc, x)
	for ; i < len(x); i++ {
		acc[i%t] += x[i]
	}
}
