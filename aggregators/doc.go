// Package aggregators turns the clients' model deltas of one round into the
// privatized update the server applies.
//
// A round's contributions are summed in a ClippedSum: each delta is clipped
// to L2 norm C and added (ClippedSum.Add), with the statistics the report
// and adaptive clipping need (clients, clipped, dropped, mean norm).
// Partial sums of parts of a cohort can be merged (ClippedSum.Merge). The
// sum is exact fixed point: each clipped coordinate x is rounded to the
// integer round(x·2^e), e = 62 − ⌈log₂ C⌉ (|x·2^e| < 2⁶³, error at most
// C·2⁻⁶² per coordinate and client, far below any noise the mechanisms
// add), and the integers are added in 128 bits, which no cohort below 2⁶⁴
// clients can overflow. Integer addition is associative, so the sum, and
// the float64 vector converted from it once, are the same bits for any
// order of the clients and any split into merged partial sums (worker
// goroutines, executors, MPI ranks adding the sums' words). The
// statistics are integers; the norms' sum is an Exact sum (terms rounded
// to a fixed unit, added in 128 bits). Whoever trains the clients (package sim's executors)
// fills the sum; an Aggregator, the mechanism, only privatizes a finished
// sum: ClipNorm(t) says at which norm round t's deltas are clipped (known
// before training; adaptive clipping's depends on earlier rounds) and
// Privatize adds the round's Gaussian noise and divides by the fixed
// expected cohort size (never the realized count: a dropped client
// contributes zero under zero-out adjacency). The function Aggregate does
// both steps on a sequence of deltas. DP-FedAvg is the matrix mechanism
// with C = I: its noise in round t is NoiseStd·z_t with z_t drawn from the
// stream ("noise", t), so noise j is the same whatever happened before and
// a run can resume mid-way.
//
// The server optimizer (a ServerOptimizer: ServerSGD, SGD with optional
// heavy-ball momentum, or ServerAdaptive, Reddi et al.'s FedAdam, FedYogi
// and FedAdagrad; both with a learning-rate schedule of the round) consumes
// the privatized update; it is post-processing and does not affect privacy.
// Server optimizers are known by name (server.optimizer) through a registry:
// each registers a ServerOptimizerKind from its own file, with the keys it
// reads, its defaults, its validation and its constructor
// (RegisterServerOptimizer). DP-FTRLM (Kairouz et al. 2021 §4.1, momentum
// on the tree's noisy prefix sums) is exactly the tree's Correlated
// aggregator followed by ServerSGD with that momentum and LR = 1/λ
// (TestDPFTRLMIsServerMomentum).
//
// Every NoiseSource can Seek to a round: after Seek(t) it streams rounds
// t, t+1, … bit-identically to an uninterrupted run, so a run resumes from a
// checkpoint (with ServerOptimizer.SetState for the optimizer).
//
// A Mechanism is one aggregation mechanism as a value (strategy, the
// participation schema its sensitivity is computed for, sampling,
// denominator): it gives the privacy event of any prefix of the run, the
// streaming noise and the Aggregator. DP-FedAvg is the mechanism of
// strategy.Identity, planned and accounted on the same path as the
// correlated-noise strategies.
//
// Adaptive clipping (AdaptiveClip, Andrew et al. 2021) makes the clip norm
// follow a target quantile of the update norms, estimated every round from
// a noisy count of unclipped clients; the count is a second release about
// the same clients, so it is part of the mechanism's privacy event
// (Mechanism.WithClipCount, EventThrough). What is proved, and used:
//   - DP-FedAvg, fixed cohort: each participation releases the update
//     (sensitivity C_t, noise σ·C_t·sens) and the centered count
//     (sensitivity ½ under zero-out adjacency, noise σ_b): together a
//     Gaussian mechanism with 1/z² = 1/σ² + 1/(2σ_b)² (Andrew et al.
//     Thm 1), composed over a client's participations.
//   - DP-FedAvg, Poisson sampling: each chance is that pair on a Poisson
//     sample, one sampled Gaussian with the same z (Andrew et al. §3).
//   - Correlated noise (tree, optimal-mf, bandmf, nu-ftrl) without
//     sampling: scale round t's update by 1/C_t (C_t depends only on
//     earlier noisy counts, so it is public); the normalized updates and
//     the counts scaled to the update's noise are the input of ONE Gaussian
//     matrix mechanism with the block-diagonal strategy diag(C, I), whose
//     sensitivity² is at most sens(C)² + K·(σ·sens/(2σ_b))² for a client
//     with at most K participations. Its privacy holds for adaptively
//     chosen inputs (Denisov et al. 2022 Thm 2.1, any C with Gaussian noise), which covers
//     the clip norm and the model depending on earlier releases. The event
//     is μ-GDP with μ² = 1/σ² + K/(4σ_b²): an upper bound (tight when the
//     pattern that maximizes sens(C) has K participations).
//
// What is not proved, and refused: correlated noise under kb-poisson
// sampling (BandMF's amplification, Choquette-Choo et al. 2023 §5, is derived for the update
// alone; extending it to the pair with the count's identity strategy is
// plausible but not done here), and population scaling (the count's noise
// is not scaled to the simulated population). The count's noise must be
// positive in a private run; when the count alone would spend the target ε
// the run is refused naming aggregator.clip_count_stddev.
//
// DP-AGD (AGD, aggregator kind dp-agd) is not a noise mechanism but a
// training algorithm with its own releases (noisy gradient, noisy max,
// re-measurement), each paid from a privacy.Ledger before it is made; its
// gradient is a ClippedSum (AGD.Release), its noisy max takes the cohort's
// clipped loss sums (AGD.Choose), and package sim's AGD algorithm drives it.
//
// Adding an aggregator kind is one file, in any package (CONTRIBUTING.md
// walks through it): its strategy, a strategy.Strategy registered by
// strategy.Register (its own parameters a type of that file, read by its
// Builder from strategy.Config.Params), and its kind, registered by
// Register. A kind with YAML keys of its own is built in: its strategy in
// aggregators/strategy/NAME.go, its entry in Kinds (aggregators/kinds.go:
// name, doc, flags, and the functions giving its parameters, defaults,
// validation, strategy name, strategy configuration and noise memory) with
// its parameter struct, and that struct inlined at the end of Config
// (aggregators/config.go).
//
// Names (one mechanism name per kind and strategy), dpfl mechanism, and
// experiments' decoding, validation, planning, accounting and memory
// estimate read these tables; nothing else changes.
//
// Package aggregators imports sim/rng, aggregators/strategy, privacy (the
// mechanism's events) and participation (the schema value and realized
// schedule); it never imports training code.
//
// # References
//
// The strategies themselves, and the papers behind them, are documented in
// package aggregators/strategy. Cited here by short name:
//
//   - Kairouz, McMahan, Song, Thakkar, Thakurta and Xu (2021), "Practical and
//     Private (Deep) Learning Without Sampling or Shuffling", ICML 2021,
//     arXiv:2103.00039: tree-aggregation DP-FTRL, DP-FTRLM (§4.1).
//   - Denisov, McMahan, Rush, Smith and Thakurta (2022), "Improved
//     Differential Privacy for SGD via Optimal Private Linear Operators on
//     Adaptive Streams", NeurIPS 2022, arXiv:2202.08312: privacy of any
//     factorization with Gaussian noise for adaptive inputs (Thm 2.1), the
//     learning-rate cooldown (§5).
//   - Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta and Xu (2023),
//     "(Amplified) Banded Matrix Factorization: A unified approach to
//     private training", NeurIPS 2023, arXiv:2306.08153: BandMF and its
//     amplification by sampling (§5), multi-epoch MF.
//   - Choquette-Choo, Dvijotham, Pillutla, Ganesh, Steinke and Thakurta
//     (2024), "Correlated Noise Provably Beats Independent Noise for
//     Differentially Private Learning", ICLR 2024, arXiv:2310.06771: ν-DP-FTRL.
//   - Lee and Kifer (2018), "Concentrated Differentially Private Gradient
//     Descent with Adaptive per-Iteration Privacy Budget", KDD 2018: DP-AGD.
//   - Dvijotham, McMahan, Pillutla, Steinke and Thakurta (2024), "Efficient
//     and Near-Optimal Noise Generation for Streaming Differential Privacy",
//     arXiv:2404.16706, and McMahan, Xu and Zhang (2024), "A Hassle-free
//     Algorithm for Private Learning in Practice: Don't Use Tree Aggregation,
//     Use BLTs", arXiv:2408.08868: BLT.
package aggregators
