package privacy

import (
	"fmt"
	"strings"
	"testing"
)

func TestNewByName(t *testing.T) {
	want := map[string]string{
		"exact": MethodExactGDP, "exact-gdp": MethodExactGDP, "rdp": MethodRDPCKS, "rdp-cks": MethodRDPCKS,
		"rdp-mironov": MethodRDPMironov, "zcdp": MethodZCDP, "zcdp-cks": MethodZCDPCKS, "pld": MethodPLD,
	}
	for name, method := range want {
		f, err := NewByName(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := f()
		_ = a.Compose(Gaussian{1}, 1)
		if g, _ := a.Epsilon(1e-6); g.Method != method {
			t.Errorf("%s: method %q, want %q", name, g.Method, method)
		}
	}
	if _, err := NewByName("prv", nil); err == nil || !strings.Contains(err.Error(), `"prv"`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := NewByName("rdp", []float64{2, 1}); err == nil {
		t.Error("order 1 accepted")
	}
	f, _ := NewByName("rdp", []float64{2, 3})
	if o := f().(*RDP).Orders(); len(o) != 2 {
		t.Errorf("orders %v", o)
	}
}

// basicAccountant is an accountant registered by a test: basic composition
// of pure-DP events (epsilons add up, delta 0).
type basicAccountant struct{ eps float64 }

func (a *basicAccountant) Supports(e Event) error {
	if err := Validate(e); err != nil {
		return err
	}
	switch e := e.(type) {
	case PureDP:
		return nil
	case SelfComposed:
		return a.Supports(e.Event)
	case Composed:
		for _, x := range e.Events {
			if err := a.Supports(x); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("privacy: the basic accountant cannot account %v: only pure-DP events", e)
}

func (a *basicAccountant) Compose(e Event, count int) error {
	if err := a.Supports(e); err != nil {
		return err
	}
	var sum func(Event) float64
	sum = func(e Event) float64 {
		switch e := e.(type) {
		case PureDP:
			return e.Epsilon
		case SelfComposed:
			return float64(e.Count) * sum(e.Event)
		case Composed:
			s := 0.0
			for _, x := range e.Events {
				s += sum(x)
			}
			return s
		}
		return 0
	}
	a.eps += float64(count) * sum(e)
	return nil
}

func (a *basicAccountant) Epsilon(delta float64) (Guarantee, error) {
	return Guarantee{Epsilon: a.eps, Delta: delta, Method: "basic"}, nil
}

func (a *basicAccountant) Delta(epsilon float64) (float64, error) {
	if epsilon >= a.eps {
		return 0, nil
	}
	return 1, nil
}

func init() {
	RegisterAccountant(AccountantKind{Name: "basic-test", New: func(AccountantOptions) Accountant { return &basicAccountant{} }})
}

// TestRegisterAccountant: an accountant registered from a test file is
// listed and used by name, the lookup configurations and dpfl account use.
func TestRegisterAccountant(t *testing.T) {
	if names := AccountantNames(); names[len(names)-1] != "basic-test" {
		t.Fatalf("names %v", names)
	}
	f, err := NewByName("basic-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	a := f()
	if err := a.Supports(PoissonSampled{0.1, PureDP{1}}); err == nil {
		t.Error("sampled event supported")
	}
	if err := a.Compose(SelfComposed{PureDP{0.5}, 3}, 2); err != nil {
		t.Fatal(err)
	}
	if g, err := a.Epsilon(1e-6); err != nil || g.Epsilon != 3 || g.Method != "basic" {
		t.Errorf("epsilon %v, %v", g, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a name registered twice was accepted")
		}
	}()
	RegisterAccountant(AccountantKind{Name: "rdp", New: func(AccountantOptions) Accountant { return &basicAccountant{} }})
}

// TestSupportsAgreesWithCompose: every registered accountant's Supports
// accepts exactly the events its Compose accepts on an empty accountant.
func TestSupportsAgreesWithCompose(t *testing.T) {
	events := []Event{
		Gaussian{1}, PureDP{1}, PoissonSampled{0.1, Gaussian{1}}, PoissonSampled{1, PureDP{1}},
		PoissonSampled{0, PureDP{1}}, PoissonSampled{0.1, PureDP{1}},
		PoissonSampled{0.1, Composed{[]Event{Gaussian{1}, Gaussian{2}}}},
		PoissonSampled{0.1, Composed{[]Event{Gaussian{1}, PureDP{1}}}},
		SelfComposed{PoissonSampled{0.1, Gaussian{1}}, 0}, SelfComposed{PoissonSampled{0.1, Gaussian{1}}, 5},
		Composed{[]Event{Gaussian{1}, PureDP{2}}}, Composed{[]Event{Gaussian{1}, PoissonSampled{0.5, Gaussian{1}}}},
		Gaussian{-1}, nil,
	}
	for _, name := range []string{"exact", "rdp", "rdp-mironov", "zcdp", "zcdp-cks", "pld"} {
		f, err := NewByName(name, []float64{1.5, 2, 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			s, c := f().Supports(e), f().Compose(e, 1)
			if (s == nil) != (c == nil) {
				t.Errorf("%s %v: Supports %v, Compose %v", name, e, s, c)
			}
		}
	}
	// The refusals that configurations and dpfl account report.
	sampled := SelfComposed{PoissonSampled{0.01, Gaussian{1}}, 100}
	for name, want := range map[string]bool{"exact": false, "zcdp": false, "zcdp-cks": false, "rdp": true, "rdp-mironov": true, "pld": true} {
		f, _ := NewByName(name, nil)
		if err := f().Supports(sampled); (err == nil) != want {
			t.Errorf("%s supports a sampled Gaussian: %v", name, err)
		} else if err != nil && !strings.Contains(err.Error(), "cannot account") {
			t.Errorf("%s: %v", name, err)
		}
		_, budget := f().(ZCDPBudgeter)
		if budget != strings.HasPrefix(name, "zcdp") {
			t.Errorf("%s: ZCDPBudgeter %v", name, budget)
		}
	}
}
