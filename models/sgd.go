package models

import "dpfl/models/internal/vec"

// SGDStep sets params[i] −= lr·grad[i]: each product rounded, then the
// difference, as the plain Go loop computes it, vectorized (AVX2 where
// available, same bits everywhere). It panics if grad is shorter than params.
func SGDStep(params, grad []float32, lr float32) { vec.Axpy(params, -lr, grad) }

// StepDelta is SGDStep(params, grad, lr) followed by dst[i] = before[i] −
// params[i] (a client's update from its parameters before and after local
// training), bit for bit, in one pass: a client's last local step.
func StepDelta(dst, before, params, grad []float32, lr float32) {
	vec.AxpySub(dst, before, params, -lr, grad)
}
