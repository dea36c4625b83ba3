package privacy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Report is the privacy account of one mechanism: the one type behind every
// output that reports privacy. dpfl account's answer for a configuration and
// for the calculator, the privacy fields of a run's summary.json, the
// sensitivity part of dpfl mechanism's report and grid -dry-run's table all
// come from it. Each JSON output is a [Form]: some of the fields, in its own
// order and under its own key names (kept from before there was one type,
// so that every output reads as it did); a field a form does not list is not
// shown. Which fields are set depends on who fills the report (a planned
// run, the calculator, an evaluated strategy): the zero value means unknown
// or not applicable.
type Report struct {
	// What is accounted.
	Mechanism string  // its name: an aggregator kind, or the calculator's gaussian or sampled-gaussian
	Strategy  string  // the correlated-noise strategy (a run's report leaves DP-FedAvg's C = I out)
	Clip      float64 // clip norm of a client update
	Steps     int     // rounds (steps) composed
	Q         float64 // Poisson sampling probability of the calculator's sampled Gaussian
	Amplified bool    // Poisson sampling: accounted as sampled Gaussians

	// The participation.
	Participation     string    // the participation setting, in words
	Schema            string    // the participation schema the sensitivity is computed for, e.g. kb(k=4,b=16)
	MaxParticipations int       // most rounds any one client took part in
	MeanCohort        float64   // mean cohort over rounds
	MeanFill          float64   // mean of cohort / target over rounds
	MinSeparation     int       // smallest gap between two participations of a client (0: none repeated)
	Cohort            int       // sampling without replacement: the cohort drawn each round
	Population        int       // sampling without replacement: the population it is drawn from
	Bins              int       // balls-in-bins: the number of bins (a client trains in every turn of its bin)
	Bands             []float64 // balls-in-bins: the first column of the banded Toeplitz C (nil: C = I)

	// The L2 sensitivity (clip = 1).
	Sensitivity       float64
	SensitivityFor    string  // what it is of, in words (a sampled round, a strategy under a schema, k participations)
	SensitivityMethod string  // how it was computed
	SensitivityExact  bool    // exact, not an upper bound
	SensitivitySingle float64 // under single participation

	// The noise.
	NoiseMultiplier float64  // sigma, relative to sensitivity 1
	NoiseStd        float64  // per-coordinate std of the noise on the clipped sum: sigma · clip · sensitivity
	Denominator     float64  // fixed divisor of the noisy sum (target cohort, or q · clients)
	Calibrated      bool     // sigma is the smallest that meets TargetEpsilon
	TargetEpsilon   *float64 // the calibration's target
	Tolerance       *float64 // the calibration's relative tolerance

	// The guarantee.
	Epsilon           *float64 // nil without noise (infinite)
	Delta             float64
	Accountant        string   // the guarantee's method (or, without noise, the configured accountant)
	EpsilonMethod     string   // the method with its order, e.g. "rdp-cks (order 9.5)", or "none (no noise)"
	Order             float64  // Renyi order of the bound (0: the method has none)
	Orders            int      // number of RDP orders searched
	RDPSeries         string   // fractional-order series of the RDP accountants: signed or abs
	Guarantee         string   // the guarantee in words (Guarantee.String)
	Adjacency         string   // the guarantee's neighbouring relation ("" when its events fix none)
	EpsilonOptimistic *float64 // PLD's optimistic estimate: a lower bound on the exact epsilon, not a guarantee
	Samples           int      // Monte Carlo: samples drawn from each side of the dominating pair
	Confidence        float64  // Monte Carlo: the probability with which the guarantee holds
	Seed              uint64   // Monte Carlo: the seed of the samples
	// Unamplified is the guarantee of the same schedule without
	// amplification (set where the report compares the two).
	Unamplified string

	// Population scaling (privacy.population_scale > 1): the simulated
	// larger population's scale, noise multiplier and guarantee; the fields
	// above are this run's own clients'.
	PopulationScale           float64
	PopulationNoiseMultiplier float64
	PopulationEpsilon         *float64
	PopulationGuarantee       string
}

// SetGuarantee records g: its epsilon, method (Accountant, and EpsilonMethod
// with the order when there is one), order and wording. Delta is left to
// the caller.
func (r *Report) SetGuarantee(g Guarantee) {
	e := g.Epsilon
	r.Epsilon, r.Accountant, r.Order, r.Guarantee = &e, g.Method, g.Order, g.String()
	r.Adjacency = g.Adjacency.String()
	r.EpsilonMethod = g.Method
	if g.Order > 0 {
		r.EpsilonMethod += fmt.Sprintf(" (order %g)", g.Order)
	}
}

// A Form is one JSON shape of a Report, or of a struct that embeds one: its
// keys in order, each showing one field (a field of the struct or one its
// embedded Report promotes).
type Form struct {
	typ  reflect.Type
	keys []formKey
}

type formKey struct {
	name      string
	index     []int
	omitEmpty bool
}

// NewForm returns the form of the struct type of proto with the given keys,
// each "name=Field" or "name=Field,omitempty" (omitted when the field is
// false, 0, nil or empty, as encoding/json's omitempty). It panics when the
// struct has no such field, so that a wrong form fails as soon as its
// package is initialized.
func NewForm(proto any, keys ...string) *Form {
	t := reflect.TypeOf(proto)
	f := &Form{typ: t}
	for _, k := range keys {
		name, field, ok := strings.Cut(k, "=")
		field, opt, _ := strings.Cut(field, ",")
		sf, found := t.FieldByName(field)
		if !ok || !found || (opt != "" && opt != "omitempty") {
			panic(fmt.Sprintf("privacy: form of %v: bad key %q", t, k))
		}
		f.keys = append(f.keys, formKey{name: name, index: sf.Index, omitEmpty: opt == "omitempty"})
	}
	return f
}

// Marshal encodes v (a value of the form's type, or a pointer to one) as one
// JSON object with the form's keys in order, each value as encoding/json
// encodes it.
func (f *Form) Marshal(v any) ([]byte, error) {
	rv := f.value(v)
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, k := range f.keys {
		fv := rv.FieldByIndex(k.index)
		if k.omitEmpty && isEmpty(fv) {
			continue
		}
		val, err := json.Marshal(fv.Interface())
		if err != nil {
			return nil, err
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		name, _ := json.Marshal(k.name)
		b.Write(name)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Unmarshal decodes a JSON object into v (a pointer to the form's type):
// each of the form's keys that data holds sets its field; other keys are
// ignored, as encoding/json ignores them.
func (f *Form) Unmarshal(data []byte, v any) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	rv := f.value(v)
	for _, k := range f.keys {
		raw, ok := obj[k.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, rv.FieldByIndex(k.index).Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
	}
	return nil
}

// value is the struct v holds or points to; it panics on another type.
func (f *Form) value(v any) reflect.Value {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	if rv.Type() != f.typ {
		panic(fmt.Sprintf("privacy: form of %v used for a %T", f.typ, v))
	}
	return rv
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
