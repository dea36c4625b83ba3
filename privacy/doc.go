// Package privacy is dpfl's privacy accounting: it turns descriptions of what a
// training run released into (epsilon, delta) guarantees, and target guarantees
// into noise multipliers.
//
// # Events
//
// Privacy-relevant releases are described by immutable events in the style of
// dp_accounting's dp_event.py: [Gaussian] (a Gaussian mechanism with noise
// multiplier sigma = noise std / L2 sensitivity), [PureDP] (an epsilon-DP
// release such as report-noisy-max), [SelfComposed] (an event repeated Count
// times), [PoissonSampled] (an event run on a Poisson sample with inclusion
// probability q), [SampledWithoutReplacement] (an event run on exactly m of
// n records drawn uniformly without replacement), [Neighbouring] (an event
// stated under a neighbouring relation) and [Composed] (different events one
// after the other).
// Accountants consume events; no accountant touches training code. All noise
// multipliers are sensitivity-normalized, as the matrix-factorization papers report σ (for
// a strategy normalized to sensitivity 1 under the run's participation): a mechanism with
// L2 sensitivity D and noise std s is Gaussian{NoiseMultiplier: s/D}.
//
// # Adjacency
//
// A guarantee is a statement about pairs of neighbouring datasets, and a
// noise multiplier is only meaningful relative to the sensitivity under the
// same relation. [Adjacency] names the three dpfl uses: add/remove (one
// record present or absent), replace-one (one record replaced by another;
// the dataset size is public) and zero-out (one record replaced by a null
// record that contributes nothing). For a sum of vectors clipped to norm C
// the sensitivity is C under add/remove and zero-out and 2C under
// replace-one. Every event fixes a relation or none: Poisson sampling is
// analysed under add/remove (or zero-out, where the sampled-Gaussian pair
// is the same: the record's contribution is there or not), sampling without
// replacement under replace-one only (as dp_accounting's accountants refuse
// an event their neighboring_relation does not cover), plain Gaussians and
// PureDP events under whichever relation their sensitivity was computed for
// unless a [Neighbouring] states it. [AdjacencyOf] finds an event's relation
// and refuses mixes; [Validate] (and so every accountant's Supports and
// Compose) refuses them, and an accountant refuses to compose an event
// whose relation differs from what it holds. A [Guarantee] carries the
// relation and its String ends with it: "ε = 2.314 at δ = 1e-05 (rdp-cks,
// order 9.5; add/remove)"; the guarantees of events that fix none carry no
// label.
//
// What dpfl's runs are stated under (aggregators.Mechanism.EventThrough):
// unamplified composition over a client's realized participations (uniform,
// single, kb, minsep; DP-FedAvg and the matrix mechanisms) is zero-out: the
// schedule does not depend on the data, and a client's updates are compared
// with none in the same schedule, at sensitivity C per participation (the
// √k and strategy sensitivities are in units of that C). Poisson sampling
// (poisson) is add/remove. kb-poisson's equal split of the population into
// groups is data-independent only if the population keeps its clients, so
// its guarantee is zero-out. Sampling without replacement (the opt-in
// privacy.amplification of a run) is replace-one, at sensitivity 2C.
//
// # Accountants
//
// Every [Accountant] has Compose(event, count), Epsilon(delta),
// Delta(epsilon) and Supports(event). Compose is atomic: when it returns an
// error the accountant is unchanged. Supports says, before anything is
// composed, whether the accountant can account an event and if not why (in
// the spirit of dp_accounting's supports()): callers ask it rather than test
// the accountant's name. The accountants are known by name through a registry
// ([RegisterAccountant], [NewByName], [AccountantNames]): each registers its
// names from its own file, and a new accountant is one file: a type
// implementing Accountant and the registration of its name.
//
//   - [NewExact]: compositions of non-sampled Gaussians are mu-GDP with
//     mu = sqrt(sum 1/sigma_i^2); the (epsilon, delta) curve is the analytic
//     Gaussian formula of Balle and Wang (2018),
//     delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu). Tight.
//   - [NewRDP]: Renyi DP over a grid of orders (Mironov 2017); the Poisson
//     subsampled Gaussian by Mironov, Talwar and Zhang (2019) at integer and
//     fractional orders; the Gaussian on a sample drawn without replacement
//     (replace-one) by the bound of Wang, Balle and Kasiviswanathan (2019)
//     that TF-Privacy's compute_rdp_sample_without_replacement and
//     dp_accounting compute, with its forward differences evaluated exactly
//     (see wor.go). Conversion to (epsilon, delta) by Mironov's
//     eps = rdp + log(1/delta)/(alpha-1) or by the improved one of Canonne,
//     Kamath and Steinke (2020); the order that attains the minimum is reported.
//   - [NewZCDP]: zero-concentrated DP (Bun and Steinke 2016, as in the Lee and Kifer 2018
//     slides): composition adds rho, a Gaussian gives 1/(2 sigma^2), epsilon-DP
//     gives epsilon^2/2; conversion by rho + 2 sqrt(rho log(1/delta)) or by the
//     tighter route through RDP (alpha rho at every alpha > 1, CKS conversion
//     at its global optimum over all orders: the bound is strictly convex in
//     alpha; and delta <= sqrt(rho/2) by Pinsker, which decides epsilon near 0).
//   - [NewPLD]: privacy-loss distributions for (Poisson-sampled, add/remove)
//     Gaussians and PureDP events and for Gaussians on samples drawn
//     without replacement (replace-one: the dominating pair of Zhu, Dong and
//     Wang 2022, the Poisson-sampled Gaussian's pair in both directions at
//     the sampling ratio, with the noise multiplier relative to the
//     replace-one sensitivity), discretized by
//     connect-the-dots and composed by FFT (gonum's dsp/fourier); the
//     tightest for sampled Gaussians: within about 1e-4 relative of the exact
//     epsilon whatever the number of steps, with an optimistic estimate
//     ([PLDBracket]) that brackets the exact value from below. See "PLD
//     accountant" below.
//
// For the same Gaussian events the first three give epsilon_zCDP >= epsilon_RDP >=
// epsilon_exact as long as the optimal Renyi order lies inside the RDP grid
// (for epsilon in the hundreds the grid's smallest order 1.1 limits RDP);
// tests check it. Sampling is only amplified by the RDP and PLD
// accountants; the exact and zCDP accountants refuse sampled events (Poisson
// or without replacement) rather than silently ignore the sampling.
//
// A [Guarantee] always carries its method, delta, (for RDP) the order used
// and its adjacency; its String method prints them all.
//
// A [Report] is the privacy account of one mechanism as the outputs show
// it (dpfl account, summary.json, dpfl mechanism, grid -dry-run): one type
// whose JSON shapes are [Form] values, each a list of keys in order naming
// the field it shows.
//
// # Balls-in-bins (Monte Carlo)
//
// A banded matrix mechanism (at most b bands, C entrywise non-negative) on
// a balls-in-bins schedule (each record in every turn of one of b bins,
// drawn uniformly and independently) is amplified by the randomness of the
// bin. [BallsInBinsEpsilon] accounts it by Monte Carlo over the dominating
// pair (see ballsinbins.go), sampled in the b sufficient statistics; the
// epsilon is the smallest whose Hoeffding upper confidence bound on delta,
// in both directions, is at most the target: it holds with the stated
// probability ([MonteCarlo].Confidence), and its method label says so
// ("monte-carlo, 99% confidence"), under zero-out adjacency. It does not
// fit the Event/Accountant interfaces (it needs C itself) and no run
// reports it: dpfl account -mechanism balls-in-bins and dpfl mechanism
// -epsilon do. Checked against jax_privacy's privacy-loss vectors, a
// numerical integration of the smallest pair, and the analytic Gaussian
// for one bin.
//
// # One-run audits
//
// [EpsilonOneRun] is the lower bound on epsilon of Steinke, Nasr and
// Jagielski's one-run audit from the scores of inserted and held-out
// canaries (see onerun.go), at a stated confidence: the empirical
// counterpart of the accountants' upper bounds, checked against
// jax_privacy's reference values.
//
// # Calibration and budgets
//
// [Calibrate] finds the smallest noise multiplier whose event meets a target
// (epsilon, delta) through an event factory (as in dp_accounting's
// mechanism_calibration.py), keeping a bracket and shrinking it by regula
// falsi; the PLD accountant first calibrates a coarse pilot of itself, so
// that 2,000 sampled steps calibrate in a few tenths of a second. The
// search ends at float64's resolution of sigma at the latest and after a
// few hundred evaluations in any case; [CalibrateContext] (and
// [EpsilonContext], [PLDBracketContext]) also end when a context is done,
// checked between evaluations and inside the PLD's long ones.
// [ZCDPBudget] is the largest zCDP rho that a target (epsilon, delta) allows
// ([ZCDPBudgetFor] for either conversion; a zCDP accountant's own, with its
// conversion, through [ZCDPBudgeter]). [Ledger] is a zCDP budget that is
// spent round by round and refuses overspending: DP-AGD (Lee and Kifer 2018;
// aggregators.AGD, aggregator kind dp-agd) pays every release from one, its
// total the largest rho whose conversion meets the target.
//
// # Which accountant reproduces which published number
//
// Checked by the tests, with the tolerances stated there:
//
//   - Choquette-Choo et al. 2023 Table 4 (σ = 4.22468, 2.23048, 1.19352, 0.65294, 0.36861 for
//     ε = 1, 2, 4, 8, 16 at δ = 1e-6): exact (GDP) calibration of one Gaussian.
//   - Kairouz et al. 2021 Table 4 DP-SGDM (q = 100/342,477, 1600 rounds, δ = 1e-6,
//     σ = 0.3..0.7 → 18.20, 7.51, 3.93, 2.40, 1.61): RDP with the CKS
//     conversion over DefaultOrders; Kairouz et al.'s prose "8.53" for σ = 0.4 is the
//     Mironov conversion of the same RDP. Kairouz et al. 2021 Table 5's DP-SGDM rows and
//     tree rows (RDP of one Gaussian per tree level) are reproduced to 1 %.
//   - Opacus's RDP test vector (σ = 1.5, q = 0.04, 2250 steps, δ = 1e-5,
//     orders 1.1..10.9 and 12..63 → 7.32911117143): CKS conversion (Mironov
//     gives 8.0738).
//   - dp_accounting's RDP vector (σ = 2.5, q = 0.01, 50 steps at orders 1.5,
//     2.5, 5, 50, 100): identical at integer orders; at the fractional orders
//     dp_accounting now sums the absolute values of the Mironov–Talwar–Zhang series, which
//     [FracAbsSeries] reproduces. The default [FracSeries] keeps the signs (as
//     TF-Privacy and Opacus do), which equals the Renyi divergence computed by
//     numerical integration, and gives TF-Privacy's older vector.
//   - zCDP values computed by an independent implementation (Lemma 3.8 and
//     zCDP→CKS at δ = 1e-6), recorded in the tests.
//   - TF-Privacy's sampling-without-replacement RDP vector (q = 0.01,
//     σ = 2.5, 50 steps, orders 1.5 .. 1024): within its printed 1e-5 at
//     every order but 256, where TF-Privacy's float64 forward differences
//     lose digits (792.8385 against the bound's exact 792.9744, computed in
//     400-digit arithmetic); a one-round replace-one oracle (numerical
//     integration of the hockey-stick divergence of the two mixtures, worst
//     case over the clipped values) lies under the PLD's δ within 1e-3
//     relative and under the RDP's.
//   - Choquette-Choo et al. 2023 Table 5, DP-SGD with amplification: the paper's σ (calibrated
//     with dp_accounting) meet ε = 1, 2, 4, 8, 16 with our PLD, 0.07 % to
//     0.11 % below; jax_privacy's PLD test vector (σ = 4, q = 1024/50,000,
//     10,000 steps, δ = 1e-5 → 2.09245) to 2e-5 relative; Kairouz et al.'s σ = 0.4 row
//     (6.06 at two decimals).
//
// # PLD accountant
//
// A pair (P, Q) of output distributions has the privacy loss L = ln(dP/dQ)
// under P and the hockey-stick curve δ(ε) = E_P[(1 − e^{ε−L})_+] (plus the
// P-mass at L = +∞); written as a function of t = e^ε it is convex and
// decreasing. Composition adds independent losses, so the composed PLD is
// the convolution of the steps' PLDs. If a pair's curve lies above (below)
// another's at every ε (a dominating (dominated) pair), the same holds after
// composing each with any third pair, since δ of a product is an average of
// the factors' curves: δ_{A×B}(ε) = E_{x∼P_A}[δ_B(ε − L_A(x))]. So it is
// enough to replace each step by a grid distribution that dominates it
// (pessimistic) or is dominated by it (optimistic).
//
// Pessimistic (connect-the-dots, Doroshenko et al. 2022): with grid losses
// ε_j = jΔ, the discrete PLD whose curve equals the exact δ at every ε_j and
// is linear in t in between lies above the convex exact curve. Equivalently
// each loss l in (ε_j, ε_{j+1}] is split between ε_j and ε_{j+1} so that the
// P-mass and the Q-mass (the mean of e^{−l}) are both kept, a mean-preserving
// spread of e^{−L}, which can only raise E[(1 − e^ε e^{−L})_+] (Jensen). Mass
// below the grid goes to its lowest point (a higher loss); above it,
// e^{ε_max}·Q(L > ε_max) goes to ε_max and δ(ε_max) to +∞. The masses are
// computed from the level-set masses of P and Q (normal CDFs through the
// inverse loss), not from differences of δ, so they keep their precision.
// Because the Q-mass is kept, the mean of e^{−L} does not drift with the
// number of steps as rounding every loss up does (T·Δ/2 after T steps); what
// remains is a variance excess of at most Δ²/4 per step (about Δ²/6), so the
// grid step is chosen at most 1/64 of the standard deviation of every step's
// loss: the composed variance is then off by a relative 1/(6·64²) ≈ 4e-5,
// whatever the number of steps, and the bracket below is measured within
// 1e-4 relative in the tests.
//
// Optimistic: outcomes are taken in increasing order of loss (bins of width
// Δ centred on the grid) and merged into consecutive groups, splitting an
// outcome between two groups where needed, so that each group's merged loss
// ln(P(group)/Q(group)) is exactly a grid point. Merging outcomes is
// post-processing, which can only lower the curve; a last group that cannot
// reach its grid point is rounded down (a lower loss lowers the curve), and
// the tails beyond the grid (at most 2e-21 of P-mass) are dropped. For a
// PureDP step (two atoms) atoms between grid points are rounded down, so
// the optimistic estimate is loose there (up to a grid step per step).
//
// Composition: each distinct step is composed count times by one FFT power
// on a circular grid that holds all but 1e-18 of the composed mass on each
// side (Chernoff bounds from the steps' moment generating functions); mass
// beyond the top wraps to low losses and is added to +∞ for the pessimistic
// estimate, mass below the bottom wraps to high losses and is subtracted
// from the optimistic one. The power would multiply the FFT's rounding of a
// coefficient by the number of steps; at the low frequencies where
// |c|^count matters the coefficients are recomputed from the masses with
// 1 − c held to full relative precision (powers). The remaining round-off
// is measured a posteriori: entries the inverse FFT returns negative are
// pure round-off, twice the largest is taken as the error of every entry,
// and delta adds (pessimistic) or subtracts (optimistic) that times the
// number of entries above ε (typically 1e-20 per entry, 1e-15 in all).
// Epsilon solves δ(ε) = target exactly for the discrete result (between
// grid points δ = s1 − e^ε s2).
//
// Package privacy imports only the standard library, gonum and dpfl's leaf
// package sim/registry (the table its accountant kinds register in).
//
// # References for the published numbers
//
//   - Kairouz, McMahan, Song, Thakkar, Thakurta and Xu (2021), "Practical and
//     Private (Deep) Learning Without Sampling or Shuffling", ICML 2021,
//     arXiv:2103.00039 (Kairouz et al. 2021): Tables 4 and 5.
//   - Denisov, McMahan, Rush, Smith and Thakurta (2022), "Improved
//     Differential Privacy for SGD via Optimal Private Linear Operators on
//     Adaptive Streams", NeurIPS 2022, arXiv:2202.08312 (Denisov et al.
//     2022): its noise-multiplier grid.
//   - Choquette-Choo, Ganesh, McKenna, McMahan, Rush, Thakurta and Xu (2023),
//     "(Amplified) Banded Matrix Factorization: A unified approach to
//     private training", NeurIPS 2023, arXiv:2306.08153 (Choquette-Choo et
//     al. 2023): Tables 4 and 5.
//   - Lee and Kifer (2018), "Concentrated Differentially Private Gradient
//     Descent with Adaptive per-Iteration Privacy Budget", KDD 2018: the zCDP
//     lemmas 3.5–3.8 (composition, Gaussian, ε-DP, conversion) cited by
//     number.
//   - Wang, Balle and Kasiviswanathan (2019), "Subsampled Rényi Differential
//     Privacy and Analytical Moments Accountant", AISTATS 2019,
//     arXiv:1808.00087: the RDP of sampling without replacement (its
//     Theorem 27 for the Gaussian, Corollary 10 for fractional orders).
//   - Zhu, Dong and Wang (2022), "Optimal Accounting of Differential Privacy
//     via Characteristic Function", AISTATS 2022, arXiv:2106.08567: dominating
//     pairs of subsampled mechanisms, sampling without replacement under
//     replace-one among them.
//   - Choquette-Choo, Ganesh, Haque, Steinke and Thakurta (2024), "Near
//     Exact Privacy Amplification for Matrix Mechanisms", arXiv:2410.06266,
//     and Chua, Ghazi, Harrison, Kamath, Kumar, Manurangsi, Sinha and Zhang
//     (2024), "Balls-and-Bins Sampling for DP-SGD", arXiv:2412.16802:
//     balls-in-bins sampling and its Monte Carlo accounting.
//   - Steinke, Nasr and Jagielski (2023), "Privacy Auditing with One (1)
//     Training Run", NeurIPS 2023, arXiv:2305.08846: the one-run audit.
//   - Balle, Barthe and Gaboardi (2018), "Privacy Amplification by
//     Subsampling: Tight Analyses via Couplings and Divergences", NeurIPS
//     2018, arXiv:1807.01647: which subsampling goes with which neighbouring
//     relation.
package privacy
