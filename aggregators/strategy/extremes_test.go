package strategy

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"dpfl/participation"
)

// extremeCase is one Config at an extreme of Build's inputs.
type extremeCase struct {
	label string
	cfg   Config
}

func extremeCases() []extremeCase {
	single := participation.AtMostOnce
	kb := func(k, b int) participation.Pattern { return participation.Turns(k, b) }
	minsep := func(k, b int) participation.Pattern {
		return participation.Spaced(k, b)
	}
	eta := func(n int, last float64) []float64 {
		e := make([]float64, n)
		for i := range e {
			e[i] = 1
		}
		e[n-1] = last
		return e
	}
	lbfgs := LBFGSOptions{MaxIter: 200}
	var out []extremeCase
	add := func(label string, cfg Config) {
		if cfg.LBFGS.MaxIter == 0 {
			cfg.LBFGS = lbfgs
		}
		out = append(out, extremeCase{label, cfg})
	}
	add("n=1 single bands=1", Config{Workload: Prefix(1), Participation: single, Bands: 1, Buffers: 1})
	add("n=1 kb(1,1)", Config{Workload: Prefix(1), Participation: kb(1, 1)})
	add("n=1 minsep(9,1)", Config{Workload: Prefix(1), Participation: minsep(9, 1)})
	add("n=2 kb(2,1)", Config{Workload: Prefix(2), Participation: kb(2, 1)})
	add("n=24 single bands=n", Config{Workload: Prefix(24), Participation: single, Bands: 24, Buffers: 23})
	add("n=24 single bands=1", Config{Workload: Prefix(24), Participation: single, Bands: 1, Buffers: 1})
	add("n=24 kb(24,1)", Config{Workload: Prefix(24), Participation: kb(24, 1)})
	add("n=24 kb(1,24)", Config{Workload: Prefix(24), Participation: kb(1, 24)})
	add("n=24 kb(huge,huge)", Config{Workload: Prefix(24), Participation: kb(math.MaxInt, math.MaxInt)})
	add("n=24 minsep(3,24) bands=24", Config{Workload: Prefix(24), Participation: minsep(3, 24), Bands: 24})
	add("n=24 minsep(huge,1)", Config{Workload: Prefix(24), Participation: minsep(math.MaxInt, 1)})
	add("n=24 identity kb(2,12)", Config{Workload: IdentityWorkload(24), Participation: kb(2, 12)})
	add("n=24 momentum 1-1e-9 kb(2,12)", Config{Workload: Momentum(24, 1-1e-9, nil), Participation: kb(2, 12)})
	add("n=24 schedule ending 1e-300 kb(2,12)", Config{Workload: Momentum(24, 0.5, eta(24, 1e-300)), Participation: kb(2, 12)})
	add("n=24 schedule ending 1e300 kb(2,12)", Config{Workload: Momentum(24, 0, eta(24, 1e300)), Participation: kb(2, 12)})
	add("n=24 schedule ending 0 single bands=3", Config{Workload: Momentum(24, 0, eta(24, 0)), Participation: single, Bands: 3, Buffers: 2})
	add("n=24 gap 1e-300 reltol 1e-300", Config{Workload: Prefix(24), Participation: kb(2, 12), Gap: 1e-300, LBFGS: LBFGSOptions{RelTol: 1e-300, MaxIter: 100000}})
	add("n=24 gap 1-1e-16 reltol 1-1e-16 maxiter 1", Config{Workload: Prefix(24), Participation: kb(2, 12), Gap: 1 - 1e-16, LBFGS: LBFGSOptions{RelTol: 1 - 1e-16, MaxIter: 1}})
	return out
}

// TestBuildExtremes: every strategy, at the extremes of its inputs (n = 1,
// bands and buffers 1 and n, b = 1 and n and above, k huge, degenerate
// workloads, schedules ending in 0, 1e-300 or 1e300, tolerances at both
// ends), gives an answer with a finite positive loss or an error, without a
// panic, each well within the test's limit; an n whose memory estimate is above the limit is
// refused before anything is built; more BLT buffers than BLTMaxBuffers
// are refused, and TuneNu refuses a grid step that would never end.
func TestBuildExtremes(t *testing.T) {
	const limit = 10 * time.Second
	for _, c := range extremeCases() {
		for _, name := range Names {
			start := time.Now()
			msg := make(chan string, 1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						msg <- fmt.Sprintf("panic: %v", p)
					}
				}()
				s, err := Build(context.Background(), name, c.cfg)
				if err != nil {
					msg <- "error: " + err.Error()
					return
				}
				m, err := Evaluate(s, c.cfg.Workload, c.cfg.Participation)
				switch {
				case err != nil:
					msg <- "evaluate error: " + err.Error()
				case !(m.Loss > 0) || math.IsInf(m.Loss, 0):
					msg <- fmt.Sprintf("BAD loss %v sens %+v", m.Loss, m.Sensitivity)
				default:
					msg <- fmt.Sprintf("ok loss %.6g", m.Loss)
				}
			}()
			select {
			case got := <-msg:
				t.Logf("%-40s %-14s %6.3fs %s", c.label, name, time.Since(start).Seconds(), got)
				if strings.HasPrefix(got, "panic") || strings.HasPrefix(got, "BAD") {
					t.Errorf("%s, %s: %s", c.label, name, got)
				}
			case <-time.After(limit):
				t.Fatalf("%s, %s: no answer within %v", c.label, name, limit)
			}
		}
	}
	// Above the memory limit: refused by the estimate, nothing built.
	for _, name := range Names {
		cfg := Config{Workload: Prefix(24), Participation: participation.Turns(2, 12), MemoryLimit: 1000}
		if _, err := Build(context.Background(), name, cfg); err == nil || !strings.Contains(err.Error(), "needs an estimated") {
			t.Errorf("%s above the memory limit: %v", name, err)
		}
	}
	// More BLT buffers than it takes, and TuneNu's grid bounds.
	for _, m := range []int{BLTMaxBuffers + 1, math.MaxInt} {
		if _, err := Build(context.Background(), "blt", Config{Workload: Prefix(24), Participation: participation.AtMostOnce, Buffers: m}); err == nil || !strings.Contains(err.Error(), "at most") {
			t.Errorf("blt with %d buffers: %v", m, err)
		}
		if _, err := OptimizeBLT(context.Background(), Prefix(24), m, participation.AtMostOnce, LBFGSOptions{}); err == nil {
			t.Errorf("OptimizeBLT with %d buffers accepted", m)
		}
	}
	for _, step := range []float64{0, -1, math.NaN(), 1e-300, 0.6} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "TuneNu step") {
					t.Errorf("TuneNu step %v: %v", step, p)
				}
			}()
			TuneNu(10, step)
		}()
	}
}
