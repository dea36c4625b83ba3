// Package strategy builds, optimizes and compares the matrix-factorization
// strategies behind dpfl's correlated-noise aggregators, offline: the
// workload A (prefix sums, SGD with momentum and a learning-rate schedule), the
// encoder C and decoder B with B C = A, the Gram matrix X = CᵀC, the L2
// sensitivity of C under a participation schema, the expected error and the
// per-round cost of generating the noise.
//
// Strategies (ALGORITHMS.md §5): identity (DP-SGD / DP-FedAvg), the binary tree
// with three estimators (vanilla, Honaker online, full pseudo-inverse), also
// restarted every R rounds (TreeRestarts: block-diagonal C, K21 TreeRestart), the
// optimal dense factorization for single participation (fixed point of
// Denisov et al. 2022 with its dual certificate), multi-epoch optimal MF under
// (k,b)-participation (equal column norms, columns of one participation pattern
// orthogonal), BandMF (Choquette-Choo et al. 2023, Problem 2, L-BFGS) and
// ν-DP-FTRL (closed-form Toeplitz coefficients), BLT (buffered linear
// Toeplitz: C from a few decaying buffers, optimized; blt.go) and banded
// Toeplitz strategies (optimized coefficients, b̂ bands; toeplitzband.go).
//
// Conventions: n is the number of rounds, indices are 0-based, σ = 1 and the
// clip norm is 1 in every error figure; Loss = sens²·‖B‖²_F, RMSE =
// sqrt(Loss/n). Matrices passed in are never modified. Functions panic on
// programmer error (bad sizes, invalid parameters) and return an error
// prefixed with "strategy:" on numerical failure.
//
// Runtime noise generation lives in package aggregators; this package only
// supplies the data it needs (a square lower-triangular factor C̃ with
// C̃ᵀC̃ = X, band counts, Toeplitz coefficients, tree nodes and weights).
//
// Speed. The fixed point needs one symmetric eigendecomposition of
// M = V^½AᵀAV^½ per iteration. For workloads without momentum (A = S·diag(η),
// prefix sums included) M⁻¹ = BBᵀ with B = V^{-½}A⁻¹ lower bidiagonal, so
// each iteration is O(n²): singular values of B by dqds (gonum Dlasq1) and
// each eigenvector by a twisted factorization (the MRRR kernel), checked in
// the tests against the dense eigensolver. Other workloads use the dense
// eigensolver (EigenBackend). Anderson acceleration in log v cuts the
// iteration count 3–10×; the dual certificate is unaffected.
//
// Every optimized strategy ends with a certificate: the fixed point's duality
// gap, and for the L-BFGS optimizations a dual lower bound on the optimal
// tr(AᵀA X⁻¹) from the KKT multipliers the final X implies, with the
// relative gap and KKT residual (certificate.go; Status.Gap, Lower, KKT).
//
// BandMF and the multi-epoch MF are optimized by L-BFGS written here
// (lbfgs.go, with its measurement against gonum/optimize: the same
// iterations and evaluations, wall times within the machine's load noise;
// kept so that existing optimized strategies stay bit-identical). For BandMF the objective
// ‖A C⁻¹‖²_F and its gradient −2(X⁻¹AᵀAX⁻¹) on the free entries are computed
// from the b̂-banded factor C by banded substitutions in O(n²b̂) per
// evaluation, checked against dense oracles; where AVX2 exists, four rows
// of A at a time (rows4: four dot products per pass over a shared
// coefficient vector, summed in gonum Ddot's lane order) and G updated once
// per 64 rows in cache-sized blocks (bandGram), bit-identical to the
// one-row code (BenchmarkBandMFEval at n = 2052, 342 bands, side by side:
// 1.24–1.34 s one row at a time, 0.41–0.55 s four at a time; BandMF with
// 342 bands as in Table 2, certificate included: 472.3 s before, 183.8 s
// after, same X bits; an eight-row kernel took more CPU time than four).
// The multi-epoch MF (dense X)
// uses Level-3 routines instead (Cholesky, inverse from the factor, one Gram
// product: ≈ 2n³ multiply-adds; the banded code at b̂ = n took 27 s per
// evaluation at n = 2052), through DenseBackend: gonum, or LAPACK/OpenBLAS
// with the lapack build tag (measured at n = 2052 under load: gonum ≈ 12 s,
// OpenBLAS ≈ 2 s per evaluation). It starts from the BandMF solution with b
// bands (Cache.MultiEpoch), a feasible point within a few percent of the
// optimum. From n = 1024 on, for prefix sums with or without a schedule and
// ⌈n/b⌉ ≤ 32, the multi-epoch MF is solved through its Lagrange dual
// instead (medual.go): a block form of the optimal fixed point whose
// multiplier has b·k̂(k̂+1)/2 entries, each iteration O(n·k̂²) per quadrature
// node through banded Cholesky factors and selected inverses, X formed
// once. At n = 2052, (6,342), pure Go: 8.8 s (T) and 12.9 s (F) with a
// certified gap below 1e-10, against 1498 s for the dense L-BFGS (T,
// 357 iterations to the 1e-6 improvement test, measured before).
//
// The O(n³) step left in the fixed point is forming X = YᵀY (then its
// Cholesky factor): gramUpper computes only the upper blocks (n³
// multiply-adds instead of 2n³), bit-identical to the full product. Side by
// side at n = 4096 (issue 18, load average 4–6): 40.4–42.4 s before,
// 27.5–29.0 s after. OptimalSingle now returns X in factored form (Y) and
// forms X and C on first use (Factorization.Explicit; the cache forms them
// to store X), so the optimization itself is the O(n²) iterations:
// BenchmarkOptimalPrefixLarge side by side (load average 7–8): n = 4096
// 32.4/32.4/33.0 s before, 11.6/13.0/11.2 s after (12 iterations; forming
// X and C afterwards 19.0/21.3/23.7 s); n = 8192 216 s before, 54.5 and
// 48.1 s after (13 iterations; forming X and C afterwards 157 s), 3.7–4.9x
// the n = 4096 time.
//
// Measured on the 2-core project machine (shared, so ±30%):
//   - fixed point to relative gap 1e-6, prefix sums: n = 256 / 1024 / 2048 in
//     0.1–0.3 s / 1.0 s / 5.6 s (9 / 11 / 11 iterations) on the O(n²) path;
//     the dense path takes 1.1 s / 140 s / ≈15 min (estimated) with gonum
//     EigenSym and 0.1 s / 5.9 s / 25 s with dsyevd (-tags lapack). The numpy
//     yardstick (eigh ≈ 2 s × ≈37 plain iterations at n = 2048) is ≈ 75 s.
//   - BandMF, n = 2052, 342 bands: 309 s, 429 L-BFGS iterations, 875
//     evaluations (within 1e-8 of the final loss after ≈ 300 iterations).
//
// Cache: Cache stores optimized strategies under a key of every parameter
// that changes them (kind, workload with n, β and η, bands or b, optimizer
// tolerances, format version); atomic writes (temporary file + rename),
// SHA-256 checksum; corrupt or stale files are recomputed. The directory is
// the caller's choice.
//
// Imports: the standard library, gonum, dpfl/participation (its Schema
// is the schema sensitivity is computed for) and dpfl/privacy (the privacy
// part of a Report). The optional native
// eigensolver (LAPACK dsyevd through gonum.org/v1/netlib/lapack/lapacke) is
// compiled only with the build tag "lapack":
//
//	apt-get install -y libopenblas-dev liblapacke-dev
//	CGO_LDFLAGS="-llapacke -lopenblas" go test -tags lapack ./aggregators/strategy/
//
// Without the tag the package is pure Go and always builds.
package strategy
