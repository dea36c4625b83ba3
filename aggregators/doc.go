// Package aggregators turns the clients' model deltas of one round into the
// privatized update the server applies.
//
// Every aggregator clips each delta to L2 norm Clip, sums the clipped deltas
// in the order given (the cohort's ID order, so the float sum does not depend
// on worker timing), adds its round's Gaussian noise, and divides by the
// fixed expected cohort size (never the realized count: a dropped client
// contributes zero under zero-out adjacency). DP-FedAvg is the matrix
// mechanism with C = I: its noise in round t is NoiseStd·z_t with z_t drawn
// from the stream ("noise", t), so noise j is the same whatever happened
// before and a run can resume mid-way.
//
// The server optimizer (SGD with optional heavy-ball momentum and a
// learning-rate schedule of the round) consumes the privatized update; it is
// post-processing and does not affect privacy. DP-FTRLM (K21 §4.1, momentum
// on the tree's noisy prefix sums) is exactly the tree's Correlated
// aggregator followed by ServerSGD with that momentum and LR = 1/λ
// (TestDPFTRLMIsServerMomentum).
//
// Every NoiseSource can Seek to a round: after Seek(t) it streams rounds
// t, t+1, … bit-identically to an uninterrupted run, so a run resumes from a
// checkpoint (with ServerSGD.SetMomentumState for the optimizer).
//
// A Mechanism is one aggregation mechanism as a value (strategy, the
// participation schema its sensitivity is computed for, sampling,
// denominator): it gives the privacy event of any prefix of the run, the
// streaming noise and the Aggregator. DP-FedAvg is the mechanism of
// strategy.Identity, planned and accounted on the same path as the
// correlated-noise strategies.
//
// Adding an aggregator kind touches three files (CONTRIBUTING.md walks
// through them):
//
//   - aggregators/strategy/NAME.go: its strategy, a strategy.Strategy (with
//     the optional interfaces that apply), registered by strategy.Register
//     in the file's init function; its own parameters are a type of that
//     file, read by its Builder from strategy.Config.Params.
//   - aggregators/kinds.go: its entry in Kinds (name, doc, flags, and the
//     functions giving its parameters, defaults, validation, strategy name,
//     strategy configuration and noise memory), with its parameter struct.
//   - aggregators/config.go: that struct inlined at the end of Config (only
//     when it has YAML keys).
//
// Names (one mechanism name per kind and strategy), dpfl mechanism, and
// experiments' decoding, validation, planning, accounting and memory
// estimate read these tables; nothing else changes.
//
// Package aggregators imports sim/rng, aggregators/strategy, privacy (the
// mechanism's events) and participation (the schema value and realized
// schedule); it never imports training code.
package aggregators
