// Package strategy builds, optimizes and compares the matrix-factorization
// strategies behind dpfl's correlated-noise aggregators, offline: the
// workload A (prefix sums, SGD with momentum and a learning-rate schedule), the
// encoder C and decoder B with B C = A, the Gram matrix X = CᵀC, the L2
// sensitivity of C under a participation schema, the expected error and the
// per-round cost of generating the noise.
//
// Strategies: identity (DP-SGD / DP-FedAvg), the binary tree
// with three estimators (vanilla, Honaker online, full pseudo-inverse), also
// restarted every R rounds (TreeRestarts: block-diagonal C, Kairouz et al. 2021 TreeRestart), the
// optimal dense factorization for single participation (fixed point of
// Denisov et al. 2022 with its dual certificate), multi-epoch optimal MF under
// (k,b)-participation (equal column norms, columns of one participation pattern
// orthogonal), BandMF (Choquette-Choo et al. 2023, Problem 2, L-BFGS) and
// ν-DP-FTRL (Choquette-Choo et al. 2024: closed-form Toeplitz coefficients),
// BLT (buffered linear Toeplitz: C from a few decaying buffers, optimized;
// blt.go) and banded Toeplitz strategies (optimized coefficients, b̂ bands;
// toeplitzband.go).
//
// Conventions: n is the number of rounds, indices are 0-based, σ = 1 and the
// clip norm is 1 in every error figure; Loss = sens²·‖B‖²_F, RMSE =
// sqrt(Loss/n). Matrices passed in are never modified. Functions panic on
// programmer error (bad sizes, invalid parameters) and return an error
// prefixed with "strategy:" on numerical failure.
//
// # The matrix mechanism
//
// A run of n rounds releases Â = B(CG + σ·sens(C)·Z) = AG + σ·sens(C)·BZ,
// G the n×d matrix of the rounds' clipped sums, Z i.i.d. N(0, 1), B = AC⁺;
// its privacy is that of one Gaussian mechanism G ↦ CG with noise
// multiplier σ relative to sens(C), for adaptively chosen rows too, with
// any C, as long as the noise is Gaussian (Denisov et al. 2022, Thm 2.1).
// Only X = CᵀC matters for privacy and for the law of the noise, so any C
// is replaced by the square lower-triangular C̃ with C̃ᵀC̃ = X (Denisov
// et al. 2022, Prop. 2.2): with J the exchange (anti-identity) matrix and
// L = chol(J X J), C̃ = J Lᵀ J; a b̂-banded X gives a b̂-banded C̃. Training
// adds σ·sens(C)·(C̃⁻¹z)_t to round t's sum, whose row t depends on
// z_0…z_t only, so the noise streams. The error measured here is
// Loss = sens(C)²·‖AC⁺‖²_F = sens(C)²·tr(A X⁻¹ Aᵀ) (Denisov et al. 2022,
// Eq. 2), invariant to C → cC.
//
// Sensitivity under a participation schema Π (a set of allowed sets π of
// rounds one client may contribute to; Choquette-Choo et al. 2023, Eq. 2
// and 5) is sens² = max_π sup ‖C D‖²_F over D with unit rows on π and zero
// elsewhere, at most max_π Σ_{i,j∈π} |X_ij|, with equality when X ≥ 0
// elementwise. Single participation: sens = sqrt(max_j X_jj). Under
// (k,b)-participation with X ≥ 0: the b quadratic forms 1_πᵀ X 1_π. A
// b̂-banded C with b̂ ≤ b and equal column norms κ: sens = κ·sqrt(k̂),
// k̂ = min(k, ⌈n/b⌉) (Choquette-Choo et al. 2023, Thm 2). Any C under
// b-min-sep: the upper bound of Choquette-Choo et al. 2023, Thm 3. The tree
// counts its complete dyadic nodes: single participation sens² =
// ⌈log₂(n+1)⌉, under min-separation the exact dynamic program of Kairouz
// et al. 2021, Thm D.3.
//
// Reference values these numbers are tested against (σ = 1, single
// participation, prefix sums A = S): identity n(n+1)/2; vanilla tree with
// n = 2^h: (h+1)·Σ_t popcount(t); at n = 64 the losses are identity 2080,
// vanilla tree 1351, Honaker online 853.7182, Honaker full 405.7182,
// C = S^{1/2} 318.1733, optimal 282.2014; at n = 2052 under (6,342) the
// sensitivities are √6 (identity), √118 (tree) and 6.0994 (C = S^{1/2}).
// Values not given in closed form or in the papers (optimal, Honaker,
// ν-DP-FTRL and BandMF losses, the momentum and cooldown workloads) are
// reference values computed by an independent implementation (float64,
// dense solvers) and recorded in the tests that use them.
//
// Runtime noise generation lives in package aggregators; this package only
// supplies the data it needs (a square lower-triangular factor C̃ with
// C̃ᵀC̃ = X, band counts, Toeplitz coefficients, tree nodes and weights).
//
// # Speed
//
// The fixed point needs one symmetric eigendecomposition of
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
// (lbfgs.go; kept rather than gonum/optimize so that existing optimized
// strategies stay bit-identical). For BandMF the objective
// ‖A C⁻¹‖²_F and its gradient −2(X⁻¹AᵀAX⁻¹) on the free entries are computed
// from the b̂-banded factor C by banded substitutions in O(n²b̂) per
// evaluation, checked against dense oracles; where AVX2 exists, four rows
// of A at a time (rows4: four dot products per pass over a shared
// coefficient vector, summed in gonum Ddot's lane order) and G updated once
// per 64 rows in cache-sized blocks (bandGram), bit-identical to the
// one-row code. The multi-epoch MF (dense X)
// uses Level-3 routines instead (Cholesky, inverse from the factor, one Gram
// product: ≈ 2n³ multiply-adds), through DenseBackend: gonum, or
// LAPACK/OpenBLAS with the lapack build tag. It starts from the BandMF
// solution with b bands (Cache.MultiEpoch), a feasible point within a few
// percent of the optimum. From n = 1024 on, for prefix sums with or without
// a schedule and ⌈n/b⌉ ≤ 32, the multi-epoch MF is solved through its
// Lagrange dual instead (medual.go): a block form of the optimal fixed point
// whose multiplier has b·k̂(k̂+1)/2 entries, each iteration O(n·k̂²) per
// quadrature node through banded Cholesky factors and selected inverses, X
// formed once, with a certified gap below 1e-10.
//
// The O(n³) step left in the fixed point is forming X = YᵀY (then its
// Cholesky factor): gramUpper computes only the upper blocks (n³
// multiply-adds instead of 2n³), bit-identical to the full product.
// OptimalSingle returns X in factored form (Y) and forms X and C on first
// use (Factorization.Explicit; the cache forms them to store X), so the
// optimization itself is the O(n²) iterations.
//
// Cache: Cache stores optimized strategies under a key of every parameter
// that changes them (kind, workload with n, β and η, bands or b, optimizer
// tolerances, format version), each entry with its SHA-256 checksum;
// corrupt or stale entries are recomputed. The package does no I/O: the
// entries' bytes go to a Store, the caller's choice (package filecache
// keeps them as files of a directory, written atomically).
//
// Imports: the standard library, gonum, dpfl/participation (its Pattern,
// what one client's participations can be, is what sensitivity is computed
// for) and dpfl/privacy (the privacy
// part of a Report). The optional native
// eigensolver (LAPACK dsyevd through gonum.org/v1/netlib/lapack/lapacke) is
// compiled only with the build tag "lapack":
//
//	apt-get install -y libopenblas-dev liblapacke-dev
//	CGO_LDFLAGS="-llapacke -lopenblas" go test -tags lapack ./aggregators/strategy/
//
// Without the tag the package is pure Go and always builds.
//
// # References
//
//   - Kairouz, McMahan, Song, Thakkar, Thakurta and Xu (2021), "Practical and
//     Private (Deep) Learning Without Sampling or Shuffling", ICML 2021,
//     arXiv:2103.00039: tree-aggregation DP-FTRL, its estimators, restarts
//     and multi-epoch tree sensitivity.
//   - Denisov, McMahan, Rush, Smith and Thakurta (2022), "Improved
//     Differential Privacy for SGD via Optimal Private Linear Operators on
//     Adaptive Streams", NeurIPS 2022, arXiv:2202.08312: the optimal dense
//     factorization by a fixed point, the momentum and learning-rate
//     workloads.
//   - Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta and Xu (2023),
//     "(Amplified) Banded Matrix Factorization: A unified approach to
//     private training", NeurIPS 2023, arXiv:2306.08153: BandMF, (k,b)- and
//     b-min-sep participation and their sensitivities, multi-epoch MF.
//   - Choquette-Choo, Dvijotham, Pillutla, Ganesh, Steinke and Thakurta
//     (2024), "Correlated Noise Provably Beats Independent Noise for
//     Differentially Private Learning", ICLR 2024, arXiv:2310.06771:
//     ν-DP-FTRL.
//   - Dvijotham, McMahan, Pillutla, Steinke and Thakurta (2024), "Efficient
//     and Near-Optimal Noise Generation for Streaming Differential Privacy",
//     arXiv:2404.16706, and McMahan, Xu and Zhang (2024), "A Hassle-free
//     Algorithm for Private Learning in Practice: Don't Use Tree Aggregation,
//     Use BLTs", arXiv:2408.08868: BLT strategies.
package strategy
