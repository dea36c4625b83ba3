package strategy

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Cancellation. The optimizers check ctx between iterations, and the dense
// products of the metrics are split into tiles with a check between them
// (mulContext), but some steps are single calls that cannot be split (a
// Cholesky or eigendecomposition of an n×n matrix, a Gram matrix behind the
// Strategy interface). Build and EvaluateContext therefore run the work in
// a goroutine and return ctx's error as soon as ctx is done; the abandoned
// work stops at its next check, and it writes nothing but a complete cache
// entry.

// withContext returns f(), or ctx.Err() as soon as ctx is done, whichever
// comes first. A panic in f is raised again in the caller. Without a Done
// channel (context.Background) f runs in the caller's goroutine.
func withContext[T any](ctx context.Context, f func() (T, error)) (T, error) {
	if ctx.Done() == nil {
		return f()
	}
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v       T
		err     error
		panicv  any
		paniced bool
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r.panicv, r.paniced = p, true
			}
			ch <- r
		}()
		r.v, r.err = f()
	}()
	select {
	case r := <-ch:
		if r.paniced {
			panic(r.panicv)
		}
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// mulTileMAdds is about how many multiply-adds one tile of mulContext
// takes (2^26: a small fraction of the whole product at the sizes where
// cancellation matters).
const mulTileMAdds = 1 << 26

// mulContext returns a·b (a m×k, b k×n), computed in tiles of 64 rows (the
// block size of gonum's Dgemm) and a multiple of 64 columns, with a check
// of ctx before each. Every entry is summed over the whole inner dimension
// in the order of the one full product (Dgemm sums each entry along k in
// blocks from 0, wherever its tile starts), so the result is bit-identical
// to a.Mul(a, b) (TestMulContextBitIdentical).
func mulContext(ctx context.Context, a, b *mat.Dense) (*mat.Dense, error) {
	m, k := a.Dims()
	k2, n := b.Dims()
	if k != k2 {
		panic(fmt.Sprintf("strategy: product of %d×%d and %d×%d", m, k, k2, n))
	}
	const rows = 64
	cols := max(64, (mulTileMAdds/(rows*max(k, 1)))/64*64)
	dst := mat.NewDense(m, n, nil)
	for i0 := 0; i0 < m; i0 += rows {
		i1 := min(i0+rows, m)
		ai := a.Slice(i0, i1, 0, k)
		for j0 := 0; j0 < n; j0 += cols {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			j1 := min(j0+cols, n)
			dst.Slice(i0, i1, j0, j1).(*mat.Dense).Mul(ai, b.Slice(0, k, j0, j1))
		}
	}
	return dst, nil
}
