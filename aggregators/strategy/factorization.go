package strategy

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"dpfl/participation"
)

// Factorization is an optimized strategy stored as its Gram matrix X and the
// square lower-triangular factor C with CᵀC = X: the optimal dense MF, the
// multi-epoch MF and BandMF.
//
// The optimal fixed point (OptimalSingle) returns X in factored form,
// X = YᵀY with Y n×n: forming X and its factor C costs O(n³) (at n = 8192
// about three times the whole iteration), so they are formed on first use,
// once, by the same operations as before (bit-identical), and only N,
// String and Status are available without them. The methods without an
// error result (Encoder, Gram, Bands, Cost) panic if that first use finds X
// not positive definite in floating point; Explicit reports it as an error.
// The Cache forms them (it stores X), so strategies from Build are explicit.
type Factorization struct {
	name   string
	n      int
	form   func() *mat.SymDense // builds X while it is in factored form
	once   sync.Once
	err    error // of forming X and C
	x      *mat.SymDense
	c      *mat.TriDense
	bands  int // number of bands of C (n when dense)
	status Status
	// single, for the optimal strategy of the O(n²) fixed point, gives its
	// single-participation metrics without X (factoredMetrics).
	single *singleFactored
}

var (
	_ Strategy  = (*Factorization)(nil)
	_ Optimized = (*Factorization)(nil)
)

// NewFactorization returns the strategy with Gram matrix X (C is computed by
// LowerFactor). It is how cached or externally computed matrices come back.
func NewFactorization(name string, x *mat.SymDense, st Status) (*Factorization, error) {
	f := &Factorization{name: name, n: x.SymmetricDim(), x: x, status: st}
	if err := f.Explicit(); err != nil {
		return nil, err
	}
	return f, nil
}

// factored returns the strategy whose X is built by form on first use.
func factored(name string, n int, form func() *mat.SymDense, st Status) *Factorization {
	return &Factorization{name: name, n: n, form: form, status: st}
}

// Explicit forms X (if it is in factored form) and C, once; it reports
// whether X is positive definite. Every method but N, String and Status
// calls it.
func (f *Factorization) Explicit() error {
	f.once.Do(func() {
		if f.form != nil {
			f.x, f.form = f.form(), nil
		}
		if f.c != nil {
			return
		}
		c, err := LowerFactor(f.x)
		if err != nil {
			f.err = fmt.Errorf("%w (%s)", err, f.name)
			return
		}
		f.c, f.bands = c, Bandwidth(f.x, zeroTol*maxDiag(f.x))
	})
	return f.err
}

// withStatus returns a copy of the explicit f with status st (X and C
// shared); f must be explicit.
func (f *Factorization) withStatus(st Status) *Factorization {
	f.mustExplicit()
	return &Factorization{name: f.name, n: f.n, x: f.x, c: f.c, bands: f.bands, status: st}
}

// mustExplicit is Explicit for the methods without an error result.
func (f *Factorization) mustExplicit() {
	if err := f.Explicit(); err != nil {
		panic(err)
	}
}

func maxDiag(x mat.Symmetric) float64 {
	m := 0.0
	for i := 0; i < x.SymmetricDim(); i++ {
		m = math.Max(m, x.At(i, i))
	}
	return m
}

var (
	_ Strategy = (*Factorization)(nil)
	_ Analyzed = (*Factorization)(nil)
	_ Banded   = (*Factorization)(nil)
)

// String returns "optimal", "multi-epoch" or "bandmf".
func (f *Factorization) String() string { return f.name }

// N returns the number of rounds.
func (f *Factorization) N() int { return f.n }

// Bands returns the number of bands of C (b̂; n for a dense C).
func (f *Factorization) Bands() int { f.mustExplicit(); return f.bands }

// Status reports the optimizer's result.
func (f *Factorization) Status() Status { return f.status }

// Encoder returns C (square, lower-triangular).
func (f *Factorization) Encoder() *mat.Dense {
	f.mustExplicit()
	var d mat.Dense
	d.CloneFrom(f.c)
	return &d
}

// Gram returns a copy of X.
func (f *Factorization) Gram() *mat.SymDense {
	f.mustExplicit()
	x := mat.NewSymDense(f.N(), nil)
	x.CopySym(f.x)
	return x
}

// Factor returns a copy of C.
func (f *Factorization) Factor() (*mat.TriDense, error) {
	if err := f.Explicit(); err != nil {
		return nil, err
	}
	c := mat.NewTriDense(f.N(), mat.Lower, nil)
	c.Copy(f.c)
	return c, nil
}

// Decoder returns A C⁻¹.
func (f *Factorization) Decoder(w *Workload) (*mat.Dense, error) {
	if err := f.Explicit(); err != nil {
		return nil, err
	}
	return solveRight(w, f.c), nil
}

// Sensitivity goes through SensitivityOf (exact for banded X under b-min-sep
// with b̂ ≤ b, and for column-orthogonal patterns under (k,b)).
func (f *Factorization) Sensitivity(p participation.Pattern) (Sensitivity, error) {
	if err := f.Explicit(); err != nil {
		return Sensitivity{}, err
	}
	return SensitivityOf(f.x, p)
}

const denseCostNote = "dense C⁻¹: all past noise vectors (or O(d) memory regenerating z_j from seeds)"

// Cost: a b̂-banded C needs the last b̂−1 noise vectors; a dense one all.
func (f *Factorization) Cost() Cost {
	f.mustExplicit()
	b := float64(f.bands)
	if f.bands >= f.N() {
		return Cost{Time: b, Memory: b, Note: denseCostNote}
	}
	return Cost{Time: b, Memory: b, Note: "banded forward substitution, last b̂−1 vectors"}
}
