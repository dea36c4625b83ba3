package strategy

import (
	"math"

	"dpfl/privacy"
)

// Report is one evaluated strategy: the object `dpfl mechanism -json`
// prints per mechanism, and what readers of that output
// (experiments/paper/mechanisms) decode. Its privacy part (the mechanism's
// name, n, the strategy, the participation schema and the sensitivity) is
// a privacy.Report; the rest is the strategy's error and noise cost.
type Report struct {
	privacy.Report
	Workload    string
	Loss        float64
	RMSE        float64
	MaxRoundStd float64
	Residual    float64
	// ResidualEstimated: Residual is Metrics.ResidualEstimated's estimate.
	ResidualEstimated bool
	NoiseTime         float64 // per round, in units of the model dimension d
	NoiseMemory       float64 // per round, in units of d
	NoiseNote         string
	Nu                *float64 // ν of ν-DP-FTRL
	NuTuned           bool     // ν was tuned, not given
	BLTTheta          []float64
	BLTOmega          []float64
	ToeplitzCoefs     []float64
	Optimizer         *OptimizerReport
	// RunAs is how a run uses the mechanism: its aggregator.kind and keys,
	// or "offline only" (set by dpfl mechanism).
	RunAs string
	Error string
}

// reportForm is Report's JSON form.
var reportForm = privacy.NewForm(Report{},
	"mechanism=Mechanism", "n=Steps", "strategy=Strategy", "workload=Workload", "participation=Schema",
	"sensitivity=Sensitivity", "sensitivity_exact=SensitivityExact", "sensitivity_method=SensitivityMethod",
	"sensitivity_single=SensitivitySingle", "loss=Loss", "rmse=RMSE", "max_round_std=MaxRoundStd",
	"residual=Residual", "residual_estimated=ResidualEstimated,omitempty", "noise_time_per_round_d=NoiseTime", "noise_memory_per_round_d=NoiseMemory",
	"noise_note=NoiseNote,omitempty", "nu=Nu,omitempty", "nu_tuned=NuTuned,omitempty", "blt_theta=BLTTheta,omitempty",
	"blt_omega=BLTOmega,omitempty", "toeplitz_coefficients=ToeplitzCoefs,omitempty", "optimizer=Optimizer,omitempty", "run_as=RunAs,omitempty", "error=Error,omitempty")

// MarshalJSON writes r in its JSON form.
func (r Report) MarshalJSON() ([]byte, error) { return reportForm.Marshal(&r) }

// UnmarshalJSON reads the JSON form.
func (r *Report) UnmarshalJSON(b []byte) error { return reportForm.Unmarshal(b, r) }

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

// NewReport is c's report for the named workload. The mechanism's name
// and Error are left for the caller, which knows how it wants them worded.
func NewReport(c Comparison, workload string) Report {
	m := c.Metrics
	r := Report{
		Report: privacy.Report{
			Steps: m.N, Strategy: m.Strategy, Schema: m.Participation,
			Sensitivity: m.Sensitivity.Value, SensitivityExact: m.Sensitivity.Exact, SensitivityMethod: m.Sensitivity.Method,
			SensitivitySingle: m.SingleSensitivity,
		},
		Workload: workload, Loss: m.Loss, RMSE: m.RMSE, MaxRoundStd: m.MaxRoundStd, Residual: m.Residual, ResidualEstimated: m.ResidualEstimated,
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
