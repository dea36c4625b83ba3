package aggregators

import (
	"strings"
	"testing"

	"dpfl/sim/rng"
)

// A clip norm driven to 0 or out of the float64 range (here by count noise
// far above the denominator) stops the run with a line naming the keys,
// not a generic failure of the inner aggregator.
func TestAdaptiveClipLeavesRange(t *testing.T) {
	a, err := NewAdaptiveClip(NewDPFedAvg(1, 0, 4, rng.New(1)), 2, 1, 0.5, 0.2, 1e300, 4, rng.New(2))
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		_, err = a.Aggregate(make([]float32, 1), round, seqOf([][]float32{{1}, {0.5}, {-1}, {0}}))
		if err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "aggregator.clip_count_stddev 1e+300") || !strings.Contains(err.Error(), "aggregator.clip_lr") {
		t.Fatalf("err = %v, want the clip norm's range problem naming clip_lr and clip_count_stddev", err)
	}
}
