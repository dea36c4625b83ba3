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
// probability q) and [Composed] (different events one after the other).
// Accountants consume events; no accountant touches training code. All noise
// multipliers are sensitivity-normalized (ALGORITHMS.md §1.5): a mechanism with
// L2 sensitivity D and noise std s is Gaussian{NoiseMultiplier: s/D}.
//
// # Accountants
//
// Every [Accountant] has Compose(event, count), Epsilon(delta) and
// Delta(epsilon). Compose is atomic: when it returns an error the accountant is
// unchanged.
//
//   - [NewExact]: compositions of non-sampled Gaussians are mu-GDP with
//     mu = sqrt(sum 1/sigma_i^2); the (epsilon, delta) curve is the analytic
//     Gaussian formula of Balle and Wang (2018),
//     delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu). Tight.
//   - [NewRDP]: Renyi DP over a grid of orders (Mironov 2017); the Poisson
//     subsampled Gaussian by Mironov, Talwar and Zhang (2019) at integer and
//     fractional orders. Conversion to (epsilon, delta) by Mironov's
//     eps = rdp + log(1/delta)/(alpha-1) or by the improved one of Canonne,
//     Kamath and Steinke (2020); the order that attains the minimum is reported.
//   - [NewZCDP]: zero-concentrated DP (Bun and Steinke 2016, as in the LK18
//     slides): composition adds rho, a Gaussian gives 1/(2 sigma^2), epsilon-DP
//     gives epsilon^2/2; conversion by rho + 2 sqrt(rho log(1/delta)) or by the
//     tighter route through RDP (alpha rho at every alpha > 1, CKS conversion).
//   - [NewPLD]: privacy-loss distributions (ALGORITHMS.md §3.4) for
//     (Poisson-sampled) Gaussians, discretized pessimistically and composed
//     by FFT (gonum's dsp/fourier); the tightest for sampled Gaussians, and
//     the slowest (about a second at the default grid for 2,000 steps).
//
// For the same Gaussian events the three give epsilon_zCDP >= epsilon_RDP >=
// epsilon_exact as long as the optimal Renyi order lies inside the RDP grid
// (for epsilon in the hundreds the grid's smallest order 1.1 limits RDP);
// tests check it. Poisson sampling is only amplified by the
// RDP accountant; the exact and zCDP accountants refuse sampled events rather
// than silently ignore the sampling.
//
// A [Guarantee] always carries its method, delta and (for RDP) the order used;
// its String method prints all three.
//
// # Calibration and budgets
//
// [Calibrate] finds the smallest noise multiplier whose event meets a target
// (epsilon, delta) by bisection through an event factory (as in
// dp_accounting's mechanism_calibration.py). [Ledger] is a zCDP budget that is
// spent round by round (the adaptive-budget gradient descent of LK18 needs it)
// and refuses overspending.
//
// # Which accountant reproduces which published number
//
// Checked by the tests, with the tolerances stated there:
//
//   - BMF23 Table 4 (σ = 4.22468, 2.23048, 1.19352, 0.65294, 0.36861 for
//     ε = 1, 2, 4, 8, 16 at δ = 1e-6): exact (GDP) calibration of one Gaussian.
//   - K21 Table 4 DP-SGDM (q = 100/342,477, 1600 rounds, δ = 1e-6,
//     σ = 0.3..0.7 → 18.20, 7.51, 3.93, 2.40, 1.61): RDP with the CKS
//     conversion over DefaultOrders; K21's prose "8.53" for σ = 0.4 is the
//     Mironov conversion of the same RDP. K21 Table 5's DP-SGDM rows and
//     tree rows (RDP of one Gaussian per tree level) are reproduced to 1 %.
//   - Opacus's RDP test vector (σ = 1.5, q = 0.04, 2250 steps, δ = 1e-5,
//     orders 1.1..10.9 and 12..63 → 7.32911117143): CKS conversion (Mironov
//     gives 8.0738).
//   - dp_accounting's RDP vector (σ = 2.5, q = 0.01, 50 steps at orders 1.5,
//     2.5, 5, 50, 100): identical at integer orders; at the fractional orders
//     dp_accounting now sums the absolute values of the MTZ series, which
//     [FracAbsSeries] reproduces. The default [FracSeries] keeps the signs (as
//     TF-Privacy and Opacus do), which equals the Renyi divergence computed by
//     numerical integration, and gives TF-Privacy's older vector.
//   - NUMBERS.md §D.1 zCDP values (Lemma 3.8 and zCDP→CKS at δ = 1e-6).
//   - BMF23 Table 5, DP-SGD with amplification (1.014, 2.014, 4.013, 8.010,
//     16.004 for the paper's ε = 1..16) and K21's σ = 0.4 row (6.06): the
//     PLD accountant at its default grid (DPFL_LONG=1 for the former).
//
// Package privacy imports only the standard library and gonum.
package privacy
