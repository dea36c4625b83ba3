package models

import "dpfl/models/internal/vec"

// SGDStep sets params[i] −= lr·grad[i]: each product rounded, then the
// difference, as the plain Go loop computes it, vectorized (AVX2 where
// available, same bits everywhere). It panics if grad is shorter than params.
func SGDStep(params, grad []float32, lr float32) { vec.Axpy(params, -lr, grad) }

// Delta sets dst[i] = before[i] − after[i] (a client's update from its
// parameters before and after local training), as the plain Go loop
// computes it, vectorized. It panics if before or after is shorter than dst.
func Delta(dst, before, after []float32) { vec.Sub(dst, before, after) }

// StepDelta is SGDStep(params, grad, lr) followed by Delta(dst, before,
// params), bit for bit, in one pass (a client's last local step).
func StepDelta(dst, before, params, grad []float32, lr float32) {
	vec.AxpySub(dst, before, params, -lr, grad)
}
