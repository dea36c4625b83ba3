package privacy

import (
	"fmt"
	"math"
	"math/cmplx"
	"sync"

	"gonum.org/v1/gonum/dsp/fourier"
)

const (
	// pldWindowTail is the mass a composition may leave outside its FFT
	// window on each side (Chernoff bound). Above the window it is added to
	// the pessimistic +Inf mass; below it is subtracted from the optimistic
	// delta.
	pldWindowTail = 1e-18
	// pldPointsPerSD is the resolution of the grid: its step is at most this
	// fraction of the standard deviation of each step's loss (and at most
	// the configured discretization).
	pldPointsPerSD = 64
	// pldStepMax caps the number of grid points of one step's distribution.
	pldStepMax = 1 << 20
)

// pldTs are the orders t of the moment generating functions E[e^{±tL}]
// used for Chernoff bounds on the tails of compositions.
var pldTs = []float64{1.0 / 16, 0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64}

// pldDist is a discretized privacy-loss distribution: mass p[i] at loss
// (lo+i)·step and pInf at +Inf. wrapped is mass whose loss is unknown (it
// wrapped around an FFT window from below): the optimistic delta subtracts
// it. Round-off is accounted a posteriori: noise bounds the error of each
// entry of p (measured from the entries an FFT returned negative, which are
// pure round-off) and err bounds the L1 norm of the error inherited from
// the inputs; the pessimistic delta adds err + noise·(entries above ε), the
// optimistic one subtracts it. up[j] and down[j] bound log E[e^{tL}] and log E[e^{-tL}] of the finite
// part at t = pldTs[j], and minL <= L <= maxL on it (computed for a single
// step, summed for compositions). s1, s2 and
// zero are set by prepare.
type pldDist struct {
	lo          int
	step        float64
	p           []float64
	pInf        float64
	wrapped     float64
	noise       float64
	pessimistic bool
	up, down    []float64
	minL, maxL  float64
	s1, s2      []float64 // s1[i] = sum_{j>=i} p[j]; s2[i] = sum_{j>=i} p[j] e^{-loss_j} (losses >= 0)
	zero        int       // index of the first non-negative loss
	// ls2 is log s2, kept (by prepare) only when losses exceed
	// pldLargeLoss, where e^{-loss} underflows and s2 loses its terms;
	// e^eps·s2 is then taken as e^{eps + ls2} wherever s2 is that small.
	ls2 []float64
}

// pldLargeLoss is the loss above which e^{-loss} nears float64's underflow.
const pldLargeLoss = 600

// expS2 is e^x·s2[i] for a loss x: from ls2 where s2 underflows.
func (d *pldDist) expS2(x float64, i int) float64 {
	if d.ls2 != nil && d.s2[i] < 1e-250 {
		return math.Exp(x + d.ls2[i])
	}
	return expTimes(x, d.s2[i])
}

// logS2 is log s2[i], from ls2 where s2 underflows.
func (d *pldDist) logS2(i int) float64 {
	if d.ls2 != nil && d.s2[i] < 1e-250 {
		return d.ls2[i]
	}
	return math.Log(d.s2[i])
}

func (d *pldDist) loss(i int) float64 { return float64(d.lo+i) * d.step }

// distCount is a distribution and how many times it is composed.
type distCount struct {
	d     *pldDist
	count int
}

// sd returns the standard deviation of the finite part's loss.
func (d *pldDist) sd() float64 {
	var m0, m1, m2 float64
	for i, p := range d.p {
		l := float64(i) * d.step // shift-invariant
		m0 += p
		m1 += p * l
		m2 += p * l * l
	}
	if m0 == 0 {
		return 0
	}
	m1 /= m0
	return math.Sqrt(math.Max(0, m2/m0-m1*m1))
}

// setBounds computes up, down, minL and maxL from the array (for a single
// step's distribution, which has no round-off).
func (d *pldDist) setBounds() {
	d.up, d.down = make([]float64, len(pldTs)), make([]float64, len(pldTs))
	first, last := -1, -1
	for i, p := range d.p {
		if p > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		d.minL, d.maxL = 0, 0
		for j := range pldTs {
			d.up[j], d.down[j] = math.Inf(-1), math.Inf(-1)
		}
		return
	}
	d.minL, d.maxL = d.loss(first), d.loss(last)
	for j, t := range pldTs {
		d.up[j] = logSumExpWeighted(d, t)
		d.down[j] = logSumExpWeighted(d, -t)
	}
}

// logSumExpWeighted is log sum_i p_i e^{t loss_i}, summed in chunks short
// enough for e^{t·step·k} to stay finite within one, each chunk's sum
// scaled by its first loss and the chunks combined in log space (about one
// multiplication per point).
func logSumExpWeighted(d *pldDist, t float64) float64 {
	r := math.Exp(t * d.step)
	chunk := max(1, int(200/math.Abs(t*d.step)))
	total := math.Inf(-1)
	for start := 0; start < len(d.p); start += chunk {
		end := min(start+chunk, len(d.p))
		s, w := 0.0, 1.0
		for _, p := range d.p[start:end] {
			s += p * w
			w *= r
		}
		if s > 0 {
			total = logAdd(total, t*d.loss(start)+math.Log(s))
		}
	}
	return total
}

// expTimes returns e^x·y for y >= 0 without the NaN of Inf·0 when e^x
// overflows (losses beyond 709): math.Exp(x)*y when e^x is finite, else
// e^(x + log y).
func expTimes(x, y float64) float64 {
	if e := math.Exp(x); !math.IsInf(e, 1) {
		return e * y
	}
	if y == 0 {
		return 0
	}
	return math.Exp(x + math.Log(y))
}

// prepare computes the suffix sums used by delta and epsilon.
func (d *pldDist) prepare() {
	n := len(d.p)
	d.s1 = make([]float64, n+1)
	d.s2 = make([]float64, n+1)
	d.zero = min(max(-d.lo, 0), n)
	for i := n - 1; i >= d.zero; i-- {
		d.s1[i] = d.s1[i+1] + d.p[i]
		d.s2[i] = d.s2[i+1] + d.p[i]*math.Exp(-d.loss(i))
	}
	if n > 0 && d.loss(n-1) > pldLargeLoss {
		d.ls2 = make([]float64, n+1)
		d.ls2[n] = math.Inf(-1)
		for i := n - 1; i >= d.zero; i-- {
			d.ls2[i] = d.ls2[i+1]
			if d.p[i] > 0 {
				d.ls2[i] = logAdd(d.ls2[i+1], math.Log(d.p[i])-d.loss(i))
			}
		}
	}
}

// offset is what delta adds to the divergence of the finite part when the
// entries from i on lie above eps: the +Inf mass and the round-off allowance
// (pessimistic), or minus the wrapped mass and the allowance (optimistic).
func (d *pldDist) offset(i int) float64 {
	allow := d.noise * float64(len(d.p)-i)
	if d.pessimistic {
		return d.pInf + allow
	}
	return -d.wrapped - allow
}

// delta is the bound on the hockey-stick divergence at eps >= 0, clipped to
// [0, 1].
func (d *pldDist) delta(eps float64) float64 {
	i := int(math.Floor(eps/d.step)) + 1 - d.lo
	i = min(max(i, d.zero), len(d.p))
	for i > d.zero && d.loss(i-1) > eps {
		i--
	}
	for i < len(d.p) && d.loss(i) <= eps {
		i++
	}
	v := math.Max(0, d.s1[i]-d.expS2(eps, i)) + d.offset(i)
	return math.Min(1, math.Max(0, v))
}

// epsilon returns the smallest eps >= 0 with delta(eps) <= target, or an
// error when even the +Inf mass and allowances exceed target. Between grid
// losses the divergence is s1 - e^eps s2, so the answer is exact for the
// distribution.
func (d *pldDist) epsilon(target float64) (float64, error) {
	if d.delta(0) <= target {
		return 0, nil
	}
	n := len(d.p)
	if top := d.offset(n); top >= target {
		return 0, fmt.Errorf("δ = %g is not above the mass at infinite loss plus the truncation and round-off allowances (%.3g)", target, top)
	}
	// Delta at grid loss i involves only j > i and is non-increasing in i.
	// Find lo with at(lo) > target >= at(lo+1); the answer is in
	// (loss_lo, loss_lo+1], where delta = s1 - e^eps s2 + offset(lo+1).
	at := func(i int) float64 {
		return math.Max(0, d.s1[i+1]-d.expS2(d.loss(i), i+1)) + d.offset(i+1)
	}
	solve := func(i int) float64 { // on the segment where entries from i on are above eps
		t := target - d.offset(i)
		if d.s1[i] <= t {
			return 0
		}
		if d.ls2 != nil && d.s2[i] < 1e-250 {
			return math.Log(d.s1[i]-t) - d.logS2(i)
		}
		if d.s2[i] == 0 {
			return 0
		}
		return math.Log((d.s1[i] - t) / d.s2[i])
	}
	lo, hi := d.zero, n-1
	if lo >= hi || at(lo) <= target {
		// The answer lies in [0, loss_zero].
		return math.Max(0, solve(d.zero)), nil
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if at(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Min(math.Max(solve(lo+1), d.loss(lo)), d.loss(hi)), nil
}

// fftCache keeps built FFT plans by length for reuse (a plan costs about as
// much to build as a transform, and calibration builds the same lengths
// again and again). A plan is used by one goroutine at a time.
var fftCache = struct {
	sync.Mutex
	free map[int][]*fourier.FFT
	n    int
}{free: map[int][]*fourier.FFT{}}

const fftCacheMax = 16 // plans kept at most

func getFFT(n int) *fourier.FFT {
	fftCache.Lock()
	defer fftCache.Unlock()
	if l := fftCache.free[n]; len(l) > 0 {
		f := l[len(l)-1]
		fftCache.free[n] = l[:len(l)-1]
		fftCache.n--
		return f
	}
	return fourier.NewFFT(n)
}

func putFFT(n int, f *fourier.FFT) {
	fftCache.Lock()
	defer fftCache.Unlock()
	if fftCache.n >= fftCacheMax {
		// Forget everything: lengths in use change with the question.
		clear(fftCache.free)
		fftCache.n = 0
	}
	fftCache.free[n] = append(fftCache.free[n], f)
	fftCache.n++
}

// smoothSize returns the smallest n >= m of the form 2^a 3^b 5^c (a >= 1)
// that gonum's FFT can factor: it stores at most fftMaxFactors factors,
// taking 4s first, then a 2, 3s and 5s.
func smoothSize(m int) int {
	best := math.MaxInt
	for p5, c := 1, 0; p5 < 2*m+10; p5, c = p5*5, c+1 {
		for p35, b := p5, 0; p35 < 2*m+10; p35, b = p35*3, b+1 {
			n, a := 2*p35, 1
			for n < m {
				n *= 2
				a++
			}
			if a/2+a%2+b+c <= fftMaxFactors {
				best = min(best, n)
			}
		}
	}
	return best
}

// fftMaxFactors is the number of factors gonum's FFT plan has room for.
const fftMaxFactors = 13

// window returns the loss range holding all but pldWindowTail of the mass
// of sum_i count_i copies of the parts on each side (Chernoff bounds from the
// parts' moment bounds), clipped to the support, together with the summed
// bounds.
func window(parts []distCount) (lo, hi, minL, maxL float64, up, down []float64) {
	up, down = make([]float64, len(pldTs)), make([]float64, len(pldTs))
	for _, pc := range parts {
		c := float64(pc.count)
		minL += c * pc.d.minL
		maxL += c * pc.d.maxL
		for j := range pldTs {
			up[j] += c * pc.d.up[j]
			down[j] += c * pc.d.down[j]
		}
	}
	// P(S > h) <= e^{-th} E[e^{tS}] <= tail  <=  h >= (log E[e^{tS}] - log tail)/t,
	// and P(S < h) <= e^{th} E[e^{-tS}] likewise.
	lt := math.Log(pldWindowTail)
	hi, lo = maxL, minL
	for j, t := range pldTs {
		hi = math.Min(hi, (up[j]-lt)/t)
		lo = math.Max(lo, (lt-down[j])/t)
	}
	return lo, hi, minL, maxL, up, down
}

// composeDists composes the parts (each count times; all on one grid) by FFT
// on a circular grid covering their window. Mass outside the window wraps
// around: from above it lands at low losses (lowering delta), which the
// pessimistic estimate repays by adding pldWindowTail to the +Inf mass; from
// below it lands at high losses (raising delta), which the optimistic
// estimate repays through its wrapped mass. The parts must be single steps
// (no round-off of their own); the output's round-off is measured. stop
// (nil: never) is checked between transforms; its error ends the work.
func composeDists(parts []distCount, maxSize int, pessimistic bool, stop func() error) (*pldDist, error) {
	step := parts[0].d.step
	logNoInf, wrapped := 0.0, 0.0
	for _, pc := range parts {
		if pc.d.step != step {
			return nil, fmt.Errorf("privacy: internal error: PLD parts on different grids (%g, %g)", step, pc.d.step)
		}
		c := float64(pc.count)
		logNoInf += c * math.Log1p(-math.Min(pc.d.pInf, 1))
		wrapped += c * pc.d.wrapped
	}
	loL, hiL, minL, maxL, up, down := window(parts)
	loK := math.Floor(loL/step) - 1
	hiK := math.Max(math.Ceil(hiL/step)+1, loK+1)
	width := hiK - loK + 1
	if width > float64(maxSize) {
		return nil, fmt.Errorf("privacy: PLD accountant needs an FFT of length %.0f > MaxSize %d (loss range %.3g..%.3g at grid step %g)", width, maxSize, loK*step, hiK*step, step)
	}
	n := smoothSize(int(width))
	if n > maxSize {
		// Another length may have large prime factors (a slow FFT) or
		// more than gonum can factor.
		return nil, fmt.Errorf("privacy: PLD accountant needs an FFT of length %d > MaxSize %d (loss range %.3g..%.3g at grid step %g)", n, maxSize, loK*step, hiK*step, step)
	}
	out, err := convolve(parts, n, int(loK), step, stop)
	if err != nil {
		return nil, err
	}
	out.pessimistic = pessimistic
	out.pInf = -math.Expm1(logNoInf)
	if pessimistic && hiL < maxL {
		out.pInf += pldWindowTail
	}
	if !pessimistic && loL > minL {
		wrapped += pldWindowTail
	}
	out.wrapped = wrapped
	out.up, out.down, out.minL, out.maxL = up, down, minL, maxL
	return out, nil
}

// convolve composes the parts by an FFT of length n and returns the result
// on losses (lo..lo+n-1)·step, or stop's error.
func convolve(parts []distCount, n, lo int, step float64, stop func() error) (*pldDist, error) {
	if stop == nil {
		stop = func() error { return nil }
	}
	if err := stop(); err != nil {
		return nil, err
	}
	fft := getFFT(n)
	defer putFFT(n, fft)
	buf := make([]float64, n)
	var spec, c []complex128
	for _, pc := range parts {
		if err := stop(); err != nil {
			return nil, err
		}
		clear(buf)
		for i, p := range pc.d.p {
			k := pc.d.lo + i
			buf[((k%n)+n)%n] += p
		}
		c = fft.Coefficients(c, buf)
		powers(c, pc, n)
		if spec == nil {
			spec = append([]complex128(nil), c...)
			continue
		}
		for i := range spec {
			spec[i] *= c[i]
		}
	}
	if err := stop(); err != nil {
		return nil, err
	}
	seq := fft.Sequence(buf, spec)
	out := &pldDist{lo: lo, step: step, p: make([]float64, n)}
	inv := 1 / float64(n)
	maxNeg := 0.0
	for i := range out.p {
		k := lo + i
		v := seq[((k%n)+n)%n] * inv
		if v > 0 {
			out.p[i] = v
		} else {
			maxNeg = math.Max(maxNeg, -v)
		}
	}
	// Negative entries are pure round-off, whose size does not depend on
	// the entry (the transform spreads it evenly): twice the largest is
	// taken as the error bound of every entry, and covers the clipping too.
	out.noise = 2 * maxNeg
	return out, nil
}

// pldRefineBudget caps the work (terms summed) spent recomputing
// low-frequency coefficients accurately in one power; pldRefineGain is the
// error amplification above which a coefficient is recomputed.
const (
	pldRefineBudget = 1 << 22
	pldRefineGain   = 1024
)

// powers replaces each coefficient c[f] = sum_j p_j e^{-2πi f k_j/n} of the
// part (masses p_j at indices k_j) by its count-th power. Rounding in the
// FFT leaves an absolute error of about u = 2^-53 in every coefficient,
// which the power multiplies by count where |c| is close to 1: at the few
// low frequencies that carry the composed distribution, the error of
// c^count grows like count·u. There the coefficient is recomputed from the
// masses: with m the index nearest the mean, c = e^{-2πi f m/n} c̃ and
// 1 − c̃ = (1 − sum p) + sum p_j 2 sin²(θ_j/2) + i sum p_j sin θ_j,
// θ_j = 2π f (k_j − m)/n reduced exactly, so 1 − c̃ is known to nearly full
// relative precision; c̃^count = exp(count·log1p(·)) and the phase of the
// shift is reduced exactly too. The error then grows like sqrt(count)·u.
// Elsewhere (where the amplification count·|c|^(count-1) is below
// pldRefineGain) repeated squaring is accurate enough: what error it leaves
// is measured with the rest of the round-off.
func powers(c []complex128, pc distCount, n int) {
	count := pc.count
	if count == 1 {
		return
	}
	p, lo := pc.d.p, pc.d.lo
	var nz []int
	var s0, s1, comp float64
	for i, x := range p {
		if x > 0 {
			nz = append(nz, i)
			s1 += x * float64(i)
			// Neumaier summation of the total mass.
			t := s0 + x
			if math.Abs(s0) >= x {
				comp += (s0 - t) + x
			} else {
				comp += (x - t) + s0
			}
			s0 = t
		}
	}
	mass := s0 + comp
	if mass == 0 {
		for f := range c {
			c[f] = 0
		}
		return
	}
	deficit := (1 - s0) - comp
	m := lo + int(math.Round(s1/mass))
	mod := func(a int) int { return ((a % n) + n) % n }
	budget := pldRefineBudget
	refine := math.Exp(math.Log(pldRefineGain/float64(count)) / float64(count-1))
	tiny := math.Exp(-746 / float64(count)) // |c|^count underflows below
	for f := range c {
		a := cmplx.Abs(c[f])
		if a < tiny {
			c[f] = 0
			continue
		}
		if a <= refine || budget < len(nz) {
			c[f] = cpow(c[f], count)
			continue
		}
		budget -= len(nz)
		var re, im, cre, cim float64
		// e^{iθ_j/2} by rotation from j to j+1 (θ grows by α = 2πf/n per
		// index), re-anchored exactly every 32 indices: half-angle sines
		// keep 1 − cos θ = 2 sin²(θ/2) accurate for small θ.
		var h complex128
		rot := cmplx.Rect(1, math.Pi*float64(f)/float64(n))
		next := -1
		for _, i := range nz {
			if i != next || i%32 == 0 {
				// θ/2 = π·r/n with r = f(k−m) mod 2n in (−n, n].
				r := ((f*(lo+i-m))%(2*n) + 2*n) % (2 * n)
				if r > n {
					r -= 2 * n
				}
				sn, cs := math.Sincos(math.Pi * float64(r) / float64(n))
				h = complex(cs, sn)
			} else {
				h *= rot
			}
			next = i + 1
			sh, ch := imag(h), real(h)
			x, y := p[i]*2*sh*sh, p[i]*2*sh*ch
			// Neumaier summation of both parts.
			t := re + x
			if math.Abs(re) >= math.Abs(x) {
				cre += (re - t) + x
			} else {
				cre += (x - t) + re
			}
			re = t
			t = im + y
			if math.Abs(im) >= math.Abs(y) {
				cim += (im - t) + y
			} else {
				cim += (y - t) + im
			}
			im = t
		}
		d := deficit + re + cre
		s := im + cim
		logMag := 0.5 * math.Log1p(-2*d+d*d+s*s)
		arg := math.Atan2(-s, 1-d)
		// Phase of the shift: 2π f m count / n, reduced exactly.
		r := mod(mod(f*mod(m)) * (count % n))
		phi := float64(count)*arg - 2*math.Pi*float64(r)/float64(n)
		c[f] = cmplx.Rect(math.Exp(float64(count)*logMag), phi)
	}
}

// cpow returns c^n for a complex c with |c| <= 1, by repeated squaring.
func cpow(c complex128, n int) complex128 {
	if n == 1 {
		return c
	}
	if cmplx.Abs(c) == 0 {
		return 0
	}
	r := complex(1, 0)
	for n > 0 {
		if n&1 == 1 {
			r *= c
		}
		c *= c
		n >>= 1
	}
	return r
}

// stepDist discretizes one step on grid step.
func stepDist(lp lossPair, step float64, pessimistic bool) *pldDist {
	var m pldPMF
	if pessimistic {
		m = pessimisticPMF(lp, step)
	} else {
		m = optimisticPMF(lp, step)
	}
	d := &pldDist{lo: m.lo, step: step, p: m.p, pInf: m.pInf, pessimistic: pessimistic}
	d.setBounds()
	return d
}

// tooWide returns composeDists' refusal, before any fine discretization,
// for a composition of the pairs (each counts[i] times) whose FFT at grid
// step would be far beyond maxSize: more than 4·maxSize points over the
// window of coarse (1024-point) discretizations of the pairs, whose loss
// moments differ from the fine ones by far less than that factor. nil
// otherwise.
func tooWide(lps []lossPair, counts []int, step float64, maxSize int) error {
	parts := make([]distCount, len(lps))
	for i, lp := range lps {
		lo, hi := lp.bounds()
		if !(hi-lo > 0) || math.IsInf(hi-lo, 1) {
			return nil
		}
		parts[i] = distCount{stepDist(lp, (hi-lo)/1024, true), counts[i]}
	}
	lo, hi, _, _, _, _ := window(parts)
	if width := (hi - lo) / step; width > 4*float64(maxSize) {
		return fmt.Errorf("privacy: PLD accountant needs an FFT of length about %.3g > MaxSize %d (loss range %.3g..%.3g at grid step %g)", width, maxSize, lo, hi, step)
	}
	return nil
}

// pldStep returns the grid step for discretizing the pairs: the largest
// maxStep/2^m at or below every pair's loss standard deviation divided by
// pldPointsPerSD. Each pessimistic discretization raises the variance of a
// step's loss by at most step²/4 (about step²/6 for a smooth density) and the
// optimistic one lowers it by about as much, so the composed variance is off
// by a relative 1/(6·pldPointsPerSD²) or less whatever the number of steps.
func pldStep(lps []lossPair, maxStep, perSD, maxPoints float64) float64 {
	step := maxStep
	for _, lp := range lps {
		lo, hi := lp.bounds()
		width := hi - lo
		if !(width > 0) {
			continue
		}
		sd := stepDist(lp, width/1024, true).sd()
		for step > sd/perSD && width/step < pldStepMax/2 {
			step /= 2
		}
	}
	// A pair whose losses span more than maxPoints points of that grid (a
	// noise multiplier so small that the loss runs into the thousands) gets
	// a coarser one: the discretizations are sound at any step, and such a
	// span is many standard deviations of its loss wide anyway.
	for _, lp := range lps {
		lo, hi := lp.bounds()
		for (hi-lo)/step > maxPoints && !math.IsInf(step, 1) {
			step *= 2
		}
	}
	return step
}
