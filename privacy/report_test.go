package privacy_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"dpfl/privacy"
)

// tagged is a struct whose encoding/json form testForm restates: a form
// writes the bytes encoding/json writes for the same keys, order and
// omitempty options.
type tagged struct {
	Mechanism string             `json:"mechanism"`
	Q         float64            `json:"q,omitempty"`
	Steps     int                `json:"rounds"`
	Epsilon   *float64           `json:"epsilon"`
	Order     float64            `json:"order,omitempty"`
	Exact     bool               `json:"sensitivity_exact"`
	Note      string             `json:"note,omitempty"`
	Inputs    map[string]string  `json:"inputs,omitempty"`
	Pop       *float64           `json:"population_epsilon,omitempty"`
	Nested    *privacy.Guarantee `json:"nested,omitempty"`
}

type withReport struct {
	Note   string
	Inputs map[string]string
	Nested *privacy.Guarantee
	privacy.Report
}

var testForm = privacy.NewForm(withReport{},
	"mechanism=Mechanism", "q=Q,omitempty", "rounds=Steps", "epsilon=Epsilon", "order=Order,omitempty",
	"sensitivity_exact=SensitivityExact", "note=Note,omitempty", "inputs=Inputs,omitempty",
	"population_epsilon=PopulationEpsilon,omitempty", "nested=Nested,omitempty")

func TestFormMatchesEncodingJSON(t *testing.T) {
	e, third := 2.5, 1.0/3
	for i, c := range []struct {
		r withReport
		t tagged
	}{
		{}, // zero: null epsilon, the omitempty keys left out
		{
			withReport{Note: "a <b> & c ε", Inputs: map[string]string{"z": "1", "a": "2"}, Nested: &privacy.Guarantee{Epsilon: 1, Method: "rdp"},
				Report: privacy.Report{Mechanism: "sampled-gaussian", Q: 0.01, Steps: 100, Epsilon: &e, Order: 9.5, SensitivityExact: true, PopulationEpsilon: &third}},
			tagged{Mechanism: "sampled-gaussian", Q: 0.01, Steps: 100, Epsilon: &e, Order: 9.5, Exact: true, Note: "a <b> & c ε",
				Inputs: map[string]string{"z": "1", "a": "2"}, Pop: &third, Nested: &privacy.Guarantee{Epsilon: 1, Method: "rdp"}},
		},
	} {
		got, err := testForm.Marshal(&c.r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(c.t)
		if string(got) != string(want) {
			t.Errorf("case %d: form %s, encoding/json %s", i, got, want)
		}
		var back withReport
		if err := testForm.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, c.r) {
			t.Errorf("case %d: read back %+v (%v), want %+v", i, back, err, c.r)
		}
	}
	// A value that encoding/json refuses is refused.
	inf := math.Inf(1)
	if _, err := testForm.Marshal(withReport{Report: privacy.Report{Epsilon: &inf}}); err == nil {
		t.Error("an infinite epsilon was encoded")
	}
}

func TestFormRefusesUnknownField(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Sigma") {
			t.Fatalf("recovered %v, want a panic naming the field", r)
		}
	}()
	privacy.NewForm(privacy.Report{}, "sigma=Sigma")
}

func TestSetGuarantee(t *testing.T) {
	var r privacy.Report
	r.SetGuarantee(privacy.Guarantee{Epsilon: 7.329, Delta: 1e-5, Method: privacy.MethodRDPCKS, Order: 9.5})
	if *r.Epsilon != 7.329 || r.Accountant != "rdp-cks" || r.EpsilonMethod != "rdp-cks (order 9.5)" || r.Order != 9.5 ||
		r.Guarantee != "ε = 7.329 at δ = 1e-05 (rdp-cks, order 9.5)" {
		t.Fatalf("%+v", r)
	}
}
