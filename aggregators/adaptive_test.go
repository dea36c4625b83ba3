package aggregators

import (
	"math"
	"slices"
	"testing"
)

// TestServerAdaptiveHandSteps: three steps of FedAdam, FedYogi and
// FedAdagrad on one coordinate (θ₀ = 1, η = 0.1, β₁ = 0.9, β₂ = 0.99,
// τ = 0.1, updates u = 1, −2, 0.01, i.e. Δ = −1, 2, −0.01) against the
// values worked out by hand from Reddi et al.'s Algorithm 2 with
// m₋₁ = 0, v₋₁ = τ² = 0.01:
//
//	adam    step 0: m = −0.1, v = 0.99·0.01 + 0.01·1 = 0.0199,
//	        θ = 1 − 0.01/(√0.0199 + 0.1) = 0.958517818387…
//	        step 1: m = −0.09 + 0.2 = 0.11, v = 0.99·0.0199 + 0.04 = 0.059701,
//	        θ += 0.011/(√0.059701 + 0.1) → 0.990463185461…
//	yogi    step 0: v − Δ² < 0, v = 0.01 + 0.01 = 0.02; step 1: v = 0.06;
//	        step 2: v − Δ² > 0, v = 0.06 − 0.01·1e-4 = 0.059999 (v shrinks)
//	adagrad v = 1.01, 5.01, 5.0101
//
// to 1e-7 (float32 θ; v to 1e-9 relative: u = 0.01 is rounded to float32); the three rules must also differ from each other
// (negative control: a rule that ignored its switch would pass one only).
func TestServerAdaptiveHandSteps(t *testing.T) {
	us := []float32{1, -2, 0.01}
	want := map[AdaptiveRule][]float64{
		Adam:    {0.9585178183872133, 0.9904631854610905, 1.0190250230453282},
		Yogi:    {0.9585786437626905, 0.9904674181039205, 1.0188775851808205},
		Adagrad: {0.9909501243788791, 0.9956543908217109, 0.999845424523967},
	}
	// The second moments after each step, by hand.
	wantV := map[AdaptiveRule][]float64{
		Adam:    {0.0199, 0.059701, 0.99*0.059701 + 0.01*1e-4},
		Yogi:    {0.02, 0.06, 0.059999},
		Adagrad: {1.01, 5.01, 5.0101},
	}
	got := map[AdaptiveRule]float32{}
	for rule, w := range want {
		s := &ServerAdaptive{Rule: rule, LR: 0.1, Beta1: 0.9, Beta2: 0.99, Tau: 0.1}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		theta := []float32{1}
		for i, u := range us {
			s.Step(theta, []float32{u}, i)
			if math.Abs(float64(theta[0])-w[i]) > 1e-7 {
				t.Errorf("%s step %d: θ = %.9g, hand %.9g", rule, i, theta[0], w[i])
			}
			if v := s.State()[1]; math.Abs(v-wantV[rule][i]) > 1e-9*wantV[rule][i] { // u = 0.01 is a float32
				t.Errorf("%s step %d: v = %.17g, hand %.17g", rule, i, v, wantV[rule][i])
			}
		}
		got[rule] = theta[0]
	}
	if got[Adam] == got[Yogi] || got[Adam] == got[Adagrad] || got[Yogi] == got[Adagrad] {
		t.Fatalf("the rules do not differ: %v", got)
	}
}

// TestServerAdaptiveSchedule: the learning-rate schedule's factor scales the
// step (cooldown's last round at Final = 0.1: a tenth of the constant
// schedule's step, to 1e-7).
func TestServerAdaptiveSchedule(t *testing.T) {
	sched := LRSchedule{Shape: LinearLR, Rounds: 10, Cooldown: 5, Final: 0.1}
	a := &ServerAdaptive{Rule: Adam, LR: 1, Beta1: 0.9, Beta2: 0.99, Tau: 1e-3, Schedule: sched}
	b := &ServerAdaptive{Rule: Adam, LR: 1, Beta1: 0.9, Beta2: 0.99, Tau: 1e-3}
	x, y := []float32{0}, []float32{0}
	a.Step(x, []float32{1}, 9)
	b.Step(y, []float32{1}, 9)
	if math.Abs(float64(x[0])-0.1*float64(y[0])) > 1e-7 || y[0] == 0 {
		t.Fatalf("scheduled step %v, constant step %v: want a tenth", x[0], y[0])
	}
}

// TestServerAdaptiveResume: 3 steps, then a new optimizer restored with
// SetState and 4 more, equals 7 straight steps bit for bit; without the
// restored state the result differs (negative control). Bad settings and
// states of the wrong length are refused.
func TestServerAdaptiveResume(t *testing.T) {
	updates := [][]float32{{1, -2}, {0.5, 0.25}, {-1, 3}, {2, 2}, {0.1, -0.3}, {-0.7, 0.2}, {1.5, 1}}
	for _, rule := range []AdaptiveRule{Adam, Yogi, Adagrad} {
		mk := func() *ServerAdaptive {
			return &ServerAdaptive{Rule: rule, LR: 0.05, Beta1: 0.9, Beta2: 0.99, Tau: 1e-2}
		}
		straight := mk()
		want := []float32{0.5, -1}
		for t, u := range updates {
			straight.Step(want, u, t)
		}
		for _, restore := range []bool{true, false} {
			first := mk()
			theta := []float32{0.5, -1}
			for t, u := range updates[:3] {
				first.Step(theta, u, t)
			}
			saved := first.State()
			second := mk()
			if restore {
				if err := second.SetState(saved, 2); err != nil {
					t.Fatal(err)
				}
			}
			for t, u := range updates[3:] {
				second.Step(theta, u, 3+t)
			}
			if slices.Equal(theta, want) != restore {
				t.Fatalf("%s restore %v: θ %v, straight %v", rule, restore, theta, want)
			}
		}
		if mk().SetState(make([]float64, 3), 2) == nil {
			t.Errorf("%s: a state of 3 values for 2 parameters accepted", rule)
		}
	}
	for _, bad := range []*ServerAdaptive{
		{Rule: Adam, LR: 0, Beta1: 0.9, Beta2: 0.99, Tau: 1e-3},
		{Rule: Adam, LR: 1, Beta1: 1, Beta2: 0.99, Tau: 1e-3},
		{Rule: Yogi, LR: 1, Beta1: 0.9, Beta2: 1.5, Tau: 1e-3},
		{Rule: Adagrad, LR: 1, Beta1: 0.9, Tau: 0},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
