package aggregators

import (
	"math"
	"strings"
	"testing"
)

// TestLRScheduleOverflow: a warmup or cooldown whose sum with the other
// overflows int is refused (it wrapped to a negative sum and passed).
func TestLRScheduleOverflow(t *testing.T) {
	for _, s := range []LRSchedule{
		{Shape: CosineLR, Rounds: 10, Warmup: math.MaxInt, Cooldown: 5},
		{Shape: LinearLR, Rounds: 10, Warmup: 5, Cooldown: math.MaxInt},
		{Shape: LinearLR, Rounds: 10, Warmup: math.MaxInt, Cooldown: math.MaxInt},
	} {
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "fit in 10 rounds") {
			t.Errorf("%+v: %v", s, err)
		}
	}
	if err := (LRSchedule{Shape: LinearLR, Rounds: 10, Warmup: 5, Cooldown: 5}).Validate(); err != nil {
		t.Errorf("5 + 5 in 10 rounds: %v", err)
	}
}
