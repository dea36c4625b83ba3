package privacy

import (
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
