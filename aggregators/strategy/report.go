package strategy

import "math"

// Report is the JSON form of one evaluated strategy: the object
// `dpfl mechanism -json` prints per strategy, and what readers of that
// output (experiments/paper/mechanisms) decode.
type Report struct {
	N                 int              `json:"n"`
	Strategy          string           `json:"strategy"`
	Workload          string           `json:"workload"`
	Participation     string           `json:"participation"`
	Sensitivity       float64          `json:"sensitivity"`
	SensitivityExact  bool             `json:"sensitivity_exact"`
	SensitivityMethod string           `json:"sensitivity_method"`
	SensitivitySingle float64          `json:"sensitivity_single"`
	Loss              float64          `json:"loss"`
	RMSE              float64          `json:"rmse"`
	MaxRoundStd       float64          `json:"max_round_std"`
	Residual          float64          `json:"residual"`
	NoiseTime         float64          `json:"noise_time_per_round_d"`
	NoiseMemory       float64          `json:"noise_memory_per_round_d"`
	NoiseNote         string           `json:"noise_note,omitempty"`
	Nu                *float64         `json:"nu,omitempty"`       // ν of ν-DP-FTRL
	NuTuned           bool             `json:"nu_tuned,omitempty"` // ν was tuned, not given
	BLTTheta          []float64        `json:"blt_theta,omitempty"`
	BLTOmega          []float64        `json:"blt_omega,omitempty"`
	ToeplitzCoefs     []float64        `json:"toeplitz_coefficients,omitempty"`
	Optimizer         *OptimizerReport `json:"optimizer,omitempty"`
	Error             string           `json:"error,omitempty"`
}

// OptimizerReport is Status without NaNs (JSON has none).
type OptimizerReport struct {
	Method     string   `json:"method"`
	Iterations int      `json:"iterations"`
	Evals      int      `json:"evaluations"`
	Gap        *float64 `json:"gap,omitempty"`
	GradNorm   *float64 `json:"grad_norm,omitempty"`
	// LowerBound and KKTResidual are the L-BFGS certificate: a dual lower
	// bound on the optimal tr(AᵀA X⁻¹), and the projected gradient relative
	// to ‖X⁻¹AᵀAX⁻¹‖_F (Gap is then (objective − bound)/objective).
	LowerBound  *float64 `json:"lower_bound,omitempty"`
	KKTResidual *float64 `json:"kkt_residual,omitempty"`
	Converged   bool     `json:"converged"`
	Message     string   `json:"message,omitempty"`
	Cached      bool     `json:"cached"`
}

// NewReport is c's report for the named workload. Error is left for the
// caller, which knows how it wants c.Err worded.
func NewReport(c Comparison, workload string) Report {
	m := c.Metrics
	r := Report{
		N: m.N, Strategy: m.Strategy, Workload: workload, Participation: m.Participation,
		Sensitivity: m.Sensitivity.Value, SensitivityExact: m.Sensitivity.Exact, SensitivityMethod: m.Sensitivity.Method,
		SensitivitySingle: m.SingleSensitivity,
		Loss:              m.Loss, RMSE: m.RMSE, MaxRoundStd: m.MaxRoundStd, Residual: m.Residual,
		NoiseTime: m.Cost.Time, NoiseMemory: m.Cost.Memory, NoiseNote: m.Cost.Note,
		Nu: m.Parameters.Nu, NuTuned: m.Parameters.NuTuned, BLTTheta: m.Parameters.Theta, BLTOmega: m.Parameters.Omega, ToeplitzCoefs: m.Parameters.Coefficients,
	}
	if st := c.Status; st != nil {
		r.Optimizer = &OptimizerReport{Method: st.Method, Iterations: st.Iterations, Evals: st.Evals,
			Gap: finitePtr(st.Gap), GradNorm: finitePtr(st.GradNorm), Converged: st.Converged, Message: st.Message, Cached: st.Cached}
		if st.Certified {
			r.Optimizer.LowerBound, r.Optimizer.KKTResidual = finitePtr(st.Lower), finitePtr(st.KKT)
		}
	}
	return r
}

func finitePtr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
