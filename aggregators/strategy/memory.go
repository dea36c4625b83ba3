package strategy

import "fmt"

// MemoryBytes estimates the peak memory, in bytes, of building the named
// strategy for n rounds (with bands b̂ for bandmf and bandmf-f) together
// with its workload, sensitivity and error: every strategy holds dense n×n
// float64 matrices (8n² bytes each: the workload, X, C, B), a few for the
// closed forms and more for the optimized ones, whose L-BFGS keeps 2·Store
// vectors of its variables. The multiples are the peak resident memory of
// dpfl mechanism (Go's collector slack included) at n = 1000 to 3000,
// rounded up. It is arithmetic only, in float64: any n is safe.
func MemoryBytes(name string, n, bands int) float64 {
	N := float64(max(n, 0))
	if b, ok := table.Lookup(name); ok && b.Memory != nil {
		return b.Memory(N, float64(bands))
	}
	return 8 * (8 * N * N)
}

// meDualMemory is MemoryBytes for the multi-epoch MF through its dual
// (useMEDual): no L-BFGS history; dense W, its products, X, C and the
// certificate's dense evaluation. Measured peak resident memory of dpfl
// mechanism at n = 2052, (6,342): 342 MB (equal column norms), 440 MB
// (unequal), 13 n²·8 bytes; rounded up to 14.
func meDualMemory(N float64) float64 { return 14 * (8 * N * N) }

// meLBFGSMemory is MemoryBytes for the multi-epoch MF by dense L-BFGS:
// ten dense matrices and the history of n²/2 variables.
func meLBFGSMemory(N float64) float64 { return 10*(8*N*N) + lbfgsMemory(N*N/2) }

// checkNeed refuses name when need bytes are above limit (0: no limit).
func checkNeed(name string, n int, need, limit float64) error {
	if limit <= 0 {
		return nil
	}
	if need > limit {
		return fmt.Errorf("strategy: %s for n = %d needs an estimated %.3g GB (dense %d×%d matrices), above the limit of %.3g GB",
			name, n, need/1e9, n, n, limit/1e9)
	}
	return nil
}

// denseMemory is a Builder's Memory for k dense n×n matrices of float64.
func denseMemory(k float64) func(n, bands float64) float64 {
	return func(n, _ float64) float64 { return k * (8 * n * n) }
}

// lbfgsMemory is the L-BFGS history of vars variables (Store 20).
func lbfgsMemory(vars float64) float64 { return 2 * 20 * 8 * vars }
