package experiments

import (
	"strings"
	"testing"

	"dpfl/aggregators/strategy"
)

// TestBLTPlanManyRounds: kind blt with 8 buffers for 1,000 rounds under
// (2,250)-participation, whose optimum drives a decay to the sigmoid's
// rounding point, plans a valid 8-buffer BLT with an exact sensitivity
// (it was refused: "decay 1 (want |θ| < 1)"); more buffers than BLT takes
// are refused naming aggregator.buffers.
func TestBLTPlanManyRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("optimizes an 8-buffer BLT for 1,000 rounds: skipped with -short")
	}
	p := accountOf(t, aggRun(1000, "  kind: kb\n  cohort: 50\n  k: 50\n  b: 20\n", "  kind: blt\n  buffers: 8\n"))
	blt, ok := p.Mechanism.Strategy.(*strategy.BLT)
	if !ok || blt.String() != "blt-m8" || !p.Mechanism.Sensitivity.Exact {
		t.Fatalf("strategy %s, sensitivity %+v", p.Mechanism.Strategy.String(), p.Mechanism.Sensitivity)
	}
	_, _, err := Load([]byte(aggRun(100, "  kind: single\n  cohort: 50\n", "  kind: blt\n  buffers: 65\n")), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), "aggregator.buffers") || !strings.Contains(err.Error(), "64") {
		t.Errorf("buffers 65: %v", err)
	}
}
