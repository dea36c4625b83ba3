package strategy

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Workload is a lower-triangular n×n linear map A whose output A G the
// training run needs (ALGORITHMS.md §5.3): prefix sums for constant-LR SGD,
// or A = S·diag(η)·M_β for heavy-ball momentum β with learning-rate schedule η.
type Workload struct {
	// Name is "prefix" or "momentum".
	Name string
	// Beta is the momentum (0 for prefix sums).
	Beta float64
	// Eta is the learning-rate schedule (nil means η ≡ 1).
	Eta []float64

	a *mat.TriDense
}

// Prefix returns the prefix-sum workload S of size n (S_ij = 1 for j ≤ i).
func Prefix(n int) *Workload {
	return Momentum(n, 0, nil)
}

// Momentum returns A = S·diag(η)·M_β, A_ij = Σ_{k=j}^{i} η_k β^{k−j}:
// the map from gradients to the trajectory of SGD with heavy-ball momentum
// beta and learning rates eta (nil means constant 1). beta = 0 with eta = nil
// is the prefix-sum workload.
func Momentum(n int, beta float64, eta []float64) *Workload {
	if n <= 0 {
		panic("strategy: non-positive n")
	}
	if beta < 0 || beta >= 1 || math.IsNaN(beta) {
		panic("strategy: momentum outside [0,1)")
	}
	if eta != nil && len(eta) != n {
		panic("strategy: learning-rate schedule length mismatch")
	}
	a := mat.NewTriDense(n, mat.Lower, nil)
	for j := 0; j < n; j++ {
		// Column j: A_ij = A_{i-1,j} + η_i β^{i−j}.
		s, p := 0.0, 1.0
		for i := j; i < n; i++ {
			e := 1.0
			if eta != nil {
				e = eta[i]
			}
			s += e * p
			p *= beta
			a.SetTri(i, j, s)
		}
	}
	name := "momentum"
	if beta == 0 && eta == nil {
		name = "prefix"
	}
	var et []float64
	if eta != nil {
		et = append([]float64(nil), eta...)
	}
	return &Workload{Name: name, Beta: beta, Eta: et, a: a}
}

// LinearCooldown returns the schedule η_t = 1 for t < n−last and
// η_t = 1 − (1−end)·(t−(n−last−1))/last for the last rounds (0-based), the
// "cooldown" of NUMBERS.md §D.3 (n = 256, last = 64, end = 0.05).
func LinearCooldown(n, last int, end float64) []float64 {
	if last < 0 || last > n {
		panic("strategy: bad cooldown length")
	}
	eta := make([]float64, n)
	for t := range eta {
		eta[t] = 1
		if t >= n-last {
			eta[t] = 1 - (1-end)*float64(t-(n-last-1))/float64(last)
		}
	}
	return eta
}

// N returns the number of rounds.
func (w *Workload) N() int { n, _ := w.a.Dims(); return n }

// A returns the workload matrix. It must not be modified.
func (w *Workload) A() *mat.TriDense { return w.a }

// IsPrefix reports whether A is the prefix-sum matrix S.
func (w *Workload) IsPrefix() bool { return w.Beta == 0 && w.allOnes() }

func (w *Workload) allOnes() bool {
	for _, e := range w.Eta {
		if e != 1 {
			return false
		}
	}
	return true
}

// Gram returns AᵀA.
func (w *Workload) Gram() *mat.SymDense {
	return atb(w.a, w.a)
}

// Key identifies the workload in cache keys: its name, n, β and a hash of η.
func (w *Workload) Key() string {
	h := sha256.New()
	var buf [8]byte
	for _, e := range w.Eta {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(e))
		h.Write(buf[:])
	}
	return fmt.Sprintf("%s-n%d-beta%v-eta%x", w.Name, w.N(), w.Beta, h.Sum(nil)[:8])
}

// mulA sets dst = A·y (y is n×m, dense, overwritten into dst).
func (w *Workload) mulA(dst, y *mat.Dense) {
	n, m := y.Dims()
	if w.IsPrefix() {
		if dst != y {
			dst.Copy(y)
		}
		raw := dst.RawMatrix()
		for i := 1; i < n; i++ {
			prev := raw.Data[(i-1)*raw.Stride : (i-1)*raw.Stride+m]
			row := raw.Data[i*raw.Stride : i*raw.Stride+m]
			for j := range row {
				row[j] += prev[j]
			}
		}
		return
	}
	var t mat.Dense
	t.Mul(w.a, y)
	dst.Copy(&t)
}
