package aggregators

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"dpfl/aggregators/strategy"
	"dpfl/sim/rng"
)

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// TestClipBoundsEveryDelta: after ClipL2 no delta is longer than the clip,
// short deltas are unchanged and long ones keep their direction.
func TestClipBoundsEveryDelta(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for trial := 0; trial < 1000; trial++ {
		v := make([]float32, 1+r.IntN(50))
		scale := math.Pow(10, 4*r.Float64()-2)
		for i := range v {
			v[i] = float32(scale * r.NormFloat64())
		}
		orig := slices.Clone(v)
		clip := 0.1 + 2*r.Float64()
		n := ClipL2(v, clip)
		if math.Abs(n-norm(orig)) > 1e-9*n {
			t.Fatalf("reported norm %g, actual %g", n, norm(orig))
		}
		if got := norm(v); got > clip*(1+1e-6) {
			t.Fatalf("clipped norm %g exceeds clip %g", got, clip)
		}
		if n <= clip && !slices.Equal(v, orig) {
			t.Fatal("a delta within the clip was changed")
		}
		for i := range v { // same direction: v = c·orig with c in (0, 1]
			if orig[i] != 0 && (v[i]/orig[i] <= 0 || v[i]/orig[i] > 1+1e-6) {
				t.Fatalf("clip changed the direction at %d: %g -> %g", i, orig[i], v[i])
			}
		}
	}
}

func seqOf(vs [][]float32) func(func([]float32) bool) {
	return func(yield func([]float32) bool) {
		for _, v := range vs {
			if !yield(v) {
				return
			}
		}
	}
}

// TestDPFedAvgWithoutNoise: with zero noise the aggregate is the sum of the
// clipped deltas divided by the fixed cohort size (not the realized count),
// and non-finite deltas are dropped.
func TestDPFedAvgWithoutNoise(t *testing.T) {
	a := NewDPFedAvg(1, 0, 4, rng.New(1))
	deltas := [][]float32{{3, 4}, {0.3, 0.4}, {float32(math.NaN()), 0}}
	dst := make([]float32, 2)
	rep, err := a.Aggregate(dst, 0, seqOf(deltas))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{(0.6 + 0.3) / 4, (0.8 + 0.4) / 4}
	for i := range dst {
		if math.Abs(float64(dst[i])-want[i]) > 1e-6 {
			t.Fatalf("aggregate %v, want %v", dst, want)
		}
	}
	if rep.Clients != 3 || rep.Clipped != 1 || rep.Dropped != 1 || rep.NoiseNorm != 0 {
		t.Fatalf("report %+v", rep)
	}
}

// TestDPFedAvgNoise: the noise on each coordinate of the sum has mean 0 and
// std NoiseStd (checked over rounds and coordinates, 5 standard errors); the
// noise of round t is the same whenever it is asked for; a run whose noise
// were off by 10% fails the same check (negative control).
func TestDPFedAvgNoise(t *testing.T) {
	const d, rounds, std, cohort = 2000, 50, 3.0, 10
	a := NewDPFedAvg(1, std, cohort, rng.New(5))
	dst := make([]float32, d)
	var s1, s2 float64
	var first []float32
	for t0 := 0; t0 < rounds; t0++ {
		if _, err := a.Aggregate(dst, t0, seqOf(nil)); err != nil {
			t.Fatal(err)
		}
		if t0 == 7 {
			first = slices.Clone(dst)
		}
		for _, x := range dst {
			e := float64(x) * cohort
			s1 += e
			s2 += e * e
		}
	}
	n := float64(d * rounds)
	mean, sd := s1/n, math.Sqrt(s2/n-(s1/n)*(s1/n))
	check := func(mean, sd float64) bool {
		return math.Abs(mean) < 5*std/math.Sqrt(n) && math.Abs(sd-std) < 5*std/math.Sqrt(2*n)
	}
	if !check(mean, sd) {
		t.Fatalf("noise mean %g std %g, want 0 and %g", mean, sd, std)
	}
	if check(mean, 1.1*sd) {
		t.Fatal("negative control: a 10% error in the noise std passed")
	}
	b := NewDPFedAvg(1, std, cohort, rng.New(5))
	again := make([]float32, d)
	b.Aggregate(again, 7, seqOf(nil))
	if !slices.Equal(first, again) {
		t.Fatal("round 7's noise changed when asked for out of order")
	}
}

func TestServerSGDMomentum(t *testing.T) {
	s := &ServerSGD{LR: 0.5, Momentum: 0.9}
	theta := []float32{1}
	s.Step(theta, []float32{1}, 0) // m = 1, theta = 0.5
	s.Step(theta, []float32{1}, 1) // m = 1.9, theta = 0.5 - 0.95
	if math.Abs(float64(theta[0])-(-0.45)) > 1e-6 {
		t.Fatalf("theta %v, want -0.45", theta[0])
	}
	if (&ServerSGD{LR: 1, Momentum: 1}).Validate() == nil || (&ServerSGD{LR: 0}).Validate() == nil {
		t.Fatal("bad server settings accepted")
	}
}

// TestServerSGDResume: 3 steps, then a new optimizer restored with
// SetMomentumState and 4 more steps, equals 7 steps straight, bit for bit;
// without the restored momentum the result differs (negative control).
func TestServerSGDResume(t *testing.T) {
	updates := [][]float32{{1, -2}, {0.5, 0.25}, {-1, 3}, {2, 2}, {0.1, -0.3}, {-0.7, 0.2}, {1.5, 1}}
	straight := &ServerSGD{LR: 0.3, Momentum: 0.9}
	want := []float32{0.5, -1}
	for t, u := range updates {
		straight.Step(want, u, t)
	}
	for _, restore := range []bool{true, false} {
		first := &ServerSGD{LR: 0.3, Momentum: 0.9}
		theta := []float32{0.5, -1}
		for t, u := range updates[:3] {
			first.Step(theta, u, t)
		}
		saved := slices.Clone(first.MomentumState())
		second := &ServerSGD{LR: 0.3, Momentum: 0.9}
		if restore {
			second.SetMomentumState(saved)
		}
		for t, u := range updates[3:] {
			second.Step(theta, u, 3+t)
		}
		if slices.Equal(theta, want) != restore {
			t.Fatalf("restore %v: theta %v, straight run %v", restore, theta, want)
		}
	}
}

// TestLRSchedule: the linear cooldown equals strategy.LinearCooldown (the
// cooldown workload of the strategy reference losses) to 1e-15; warmup reaches 1 at its last round;
// cosine and linear agree at the ends and midpoint and cosine is below
// linear in the first half of a warmup; Step uses the round's factor; bad
// schedules are refused.
func TestLRSchedule(t *testing.T) {
	lin := LRSchedule{Shape: LinearLR, Rounds: 256, Cooldown: 64, Final: 0.05}
	want := strategy.LinearCooldown(256, 64, 0.05)
	for r, f := range lin.Factors() {
		if math.Abs(f-want[r]) > 1e-15 {
			t.Fatalf("round %d: factor %v, LinearCooldown %v", r, f, want[r])
		}
	}
	w := LRSchedule{Shape: LinearLR, Rounds: 20, Warmup: 4, Cooldown: 5, Final: 0.1}
	wantW := []float64{0.25, 0.5, 0.75, 1, 1}
	for r, x := range wantW {
		if math.Abs(w.Factor(r)-x) > 1e-15 {
			t.Fatalf("warmup round %d: %v, want %v", r, w.Factor(r), x)
		}
	}
	if math.Abs(w.Factor(19)-0.1) > 1e-15 || math.Abs(w.Factor(14)-1) > 1e-15 || math.Abs(w.Factor(17)-(1-0.9*3/5.0)) > 1e-15 {
		t.Fatalf("cooldown factors %v", w.Factors())
	}
	c := w
	c.Shape = CosineLR
	if math.Abs(c.Factor(1)-0.5) > 1e-15 || math.Abs(c.Factor(3)-1) > 1e-15 || math.Abs(c.Factor(19)-0.1) > 1e-15 || !(c.Factor(0) < w.Factor(0)) {
		t.Fatalf("cosine factors %v", c.Factors())
	}
	if (LRSchedule{}).Factors() != nil || (LRSchedule{}).Factor(1000) != 1 {
		t.Fatal("the zero schedule is not constant")
	}
	s := &ServerSGD{LR: 2, Schedule: w}
	theta := []float32{0}
	s.Step(theta, []float32{1}, 19)
	if math.Abs(float64(theta[0])+0.2) > 1e-7 {
		t.Fatalf("step at round 19: theta %v, want -0.2", theta[0])
	}
	for _, bad := range []LRSchedule{
		{Shape: ConstantLR, Warmup: 1, Rounds: 10},
		{Shape: LinearLR, Rounds: 10, Warmup: 6, Cooldown: 5},
		{Shape: CosineLR, Rounds: 10, Cooldown: 5, Final: 1.5},
		{Shape: LRShape(7), Rounds: 10},
	} {
		if bad.Validate() == nil {
			t.Errorf("schedule %+v accepted", bad)
		}
	}
}
