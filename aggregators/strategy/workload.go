package strategy

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Workload is a lower-triangular n×n linear map A whose output A G the
// training run needs (Denisov et al. 2022, Eq. 9–11): prefix sums for constant-LR SGD,
// or A = S·diag(η)·M_β for heavy-ball momentum β with learning-rate schedule η.
type Workload struct {
	// Name is "prefix", "momentum", or a Custom workload's name.
	Name string
	// Beta is the momentum (0 for prefix sums).
	Beta float64
	// Eta is the learning-rate schedule (nil means η ≡ 1).
	Eta []float64

	a      *mat.TriDense
	custom bool // A given as a matrix (Custom): Beta and Eta do not describe it
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
	// Column j: A_ij = A_{i-1,j} + η_i β^{i−j}, with s_j and p_j = β^{i−j}
	// carried from row to row (the same operations in the same order as
	// down each column, written row by row: at large n, column order
	// missed the cache on every entry).
	raw := a.RawTriangular()
	s, p := make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		p[i] = 1
		e := 1.0
		if eta != nil {
			e = eta[i]
		}
		row := raw.Data[i*raw.Stride : i*raw.Stride+i+1]
		for j := range row {
			s[j] += e * p[j]
			p[j] *= beta
			row[j] = s[j]
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
// cooldown of the reference losses (n = 256, last = 64, end = 0.05).
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

// IsPrefix reports whether A is the prefix-sum matrix S (a Custom workload
// never counts as one, whatever its entries).
func (w *Workload) IsPrefix() bool { return !w.custom && w.Beta == 0 && w.allOnes() }

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
	if w.custom {
		raw := w.a.RawTriangular()
		for i := 0; i < raw.N; i++ {
			for _, x := range raw.Data[i*raw.Stride : i*raw.Stride+i+1] {
				binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
				h.Write(buf[:])
			}
		}
		return fmt.Sprintf("custom-%s-n%d-a%x", w.Name, w.N(), h.Sum(nil)[:8])
	}
	return fmt.Sprintf("%s-n%d-beta%v-eta%x", w.Name, w.N(), w.Beta, h.Sum(nil)[:8])
}

// Custom returns the workload of the given matrix A (copied), named name in
// outputs and cache keys: any square lower-triangular A with finite entries
// and a nonzero diagonal (invertible: the optimal factorization needs
// AᵀA positive definite). Its rows are the linear combinations of the
// rounds' updates the training needs, one per round;
// lower-triangular, so that round t's output depends on rounds ≤ t only.
func Custom(name string, a mat.Matrix) (*Workload, error) {
	r, c := a.Dims()
	if r != c || r == 0 {
		return nil, fmt.Errorf("strategy: workload %s is %d×%d, want a square matrix with at least one row", name, r, c)
	}
	t := mat.NewTriDense(r, mat.Lower, nil)
	sq := 0.0 // ‖A‖²_F: the metrics square A's entries
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			x := a.At(i, j)
			switch {
			case math.IsNaN(x) || math.IsInf(x, 0):
				return nil, fmt.Errorf("strategy: workload %s: entry (%d,%d) is %v", name, i+1, j+1, x)
			case j > i && x != 0:
				return nil, fmt.Errorf("strategy: workload %s: entry (%d,%d) = %v above the diagonal (A must be lower-triangular: round t's output may depend only on rounds up to t)", name, i+1, j+1, x)
			case j == i && x == 0:
				return nil, fmt.Errorf("strategy: workload %s: diagonal entry (%d,%d) is 0 (A must be invertible)", name, i+1, i+1)
			case j <= i:
				t.SetTri(i, j, x)
				sq += x * x
			}
		}
	}
	if math.IsInf(sq, 0) {
		return nil, fmt.Errorf("strategy: workload %s: entries too large: the sum of their squares overflows float64 (scale A down)", name)
	}
	return &Workload{Name: name, a: t, custom: true}, nil
}

// IdentityWorkload returns A = I (each round's update on its own: the error
// of each round's noisy gradient).
func IdentityWorkload(n int) *Workload {
	if n <= 0 {
		panic("strategy: non-positive n")
	}
	a := mat.NewDiagDense(n, nil)
	for i := 0; i < n; i++ {
		a.SetDiag(i, 1)
	}
	w, err := Custom("identity", a)
	if err != nil {
		panic(err)
	}
	return w
}

// ReadWorkload reads a workload matrix from text: one row of A per line,
// entries separated by spaces, tabs or commas; blank lines and lines
// starting with # are skipped. See Custom for what A must be.
func ReadWorkload(r io.Reader, name string) (*Workload, error) {
	return ReadWorkloadLimit(r, name, 0)
}

// ReadWorkloadLimit is ReadWorkload refusing, as soon as it is read, a row
// of more than maxN entries (maxN > 0), a row longer than the first or more
// rows than the first has entries: memory stays within a few times maxN²
// float64s (lines are at most 1 GB) whatever the file holds.
func ReadWorkloadLimit(r io.Reader, name string, maxN int) (*Workload, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	isSep := func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }
	var rows [][]float64
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		// Count the entries before splitting (a long line of separators
		// would otherwise allocate a string header per entry).
		count, in := 0, false
		for _, c := range text {
			if sep := isSep(c); !sep && !in {
				count++
				in = true
			} else if sep {
				in = false
			}
		}
		if maxN > 0 && count > maxN {
			return nil, fmt.Errorf("strategy: workload %s line %d: %d entries, above the %d rounds that fit in memory", name, line, count, maxN)
		}
		if len(rows) > 0 && count != len(rows[0]) {
			return nil, fmt.Errorf("strategy: workload %s line %d: %d entries, the first row has %d", name, line, count, len(rows[0]))
		}
		if len(rows) > 0 && len(rows) == len(rows[0]) {
			return nil, fmt.Errorf("strategy: workload %s has %d rows of %d entries (or more), want a square matrix", name, len(rows)+1, len(rows[0]))
		}
		fields := strings.FieldsFunc(text, isSep)
		row := make([]float64, len(fields))
		for i, f := range fields {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("strategy: workload %s line %d: entry %d %q is not a number", name, line, i+1, f)
			}
			row[i] = x
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("strategy: workload %s: %w", name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("strategy: workload %s has no rows", name)
	}
	if len(rows) != len(rows[0]) {
		return nil, fmt.Errorf("strategy: workload %s has %d rows of %d entries, want a square matrix", name, len(rows), len(rows[0]))
	}
	n := len(rows)
	d := mat.NewDense(n, n, nil)
	for i, row := range rows {
		d.SetRow(i, row)
	}
	return Custom(name, d)
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
