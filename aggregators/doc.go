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
// The server optimizer (SGD with optional heavy-ball momentum) consumes the
// privatized update; it is post-processing and does not affect privacy.
//
// Package aggregators imports sim/rng, and (for correlated-noise mechanisms)
// aggregators/strategy; it never imports training code.
package aggregators
