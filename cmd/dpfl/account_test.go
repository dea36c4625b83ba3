package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func runAccount(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"account"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func accountJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := runAccount(t, append(args, "-json")...)
	if code != exitOK {
		t.Fatalf("dpfl account %v: exit %d, stderr %q", args, code, errs)
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("output %q is not JSON: %v", out, err)
	}
	if dec.More() {
		t.Fatalf("output %q holds more than one JSON value", out)
	}
	for _, k := range []string{"epsilon", "delta", "sigma", "steps", "sensitivity", "accountant"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON %q lacks key %q", out, k)
		}
	}
	return m
}

func TestAccountExactText(t *testing.T) {
	// Choquette-Choo et al. 2023 Table 4: σ = 4.22468 → ε = 1.000 at δ = 1e-6 with the exact accountant (the default).
	code, out, errs := runAccount(t, "-sigma", "4.22468", "-delta", "1e-6")
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"mechanism    gaussian", "steps        1", "accountant   exact-gdp", "epsilon      ε = 1.000 at δ = 1e-06 (exact-gdp)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestAccountSampledJSON(t *testing.T) {
	// Opacus vector: q = 0.04, σ = 1.5, 2250 steps, δ = 1e-5 → 7.32911117143 with
	// RDP-CKS over 1.1..10.9 and 12..63 (tolerance 1e-9); sampled defaults to RDP (CKS).
	var list []string
	for x := 1; x < 100; x++ {
		list = append(list, strconv.FormatFloat(1+float64(x)/10, 'g', -1, 64))
	}
	for a := 12; a < 64; a++ {
		list = append(list, strconv.Itoa(a))
	}
	orders := strings.Join(list, ",")
	m := accountJSON(t, "-q", "0.04", "-sigma", "1.5", "-steps", "2250", "-delta", "1e-5", "-orders", orders)
	if e := m["epsilon"].(float64); math.Abs(e-7.32911117143) > 1e-9 {
		t.Errorf("epsilon %v, want 7.32911117143", e)
	}
	if m["accountant"] != "rdp-cks" || m["order"] != 3.9 || m["mechanism"] != "sampled-gaussian" || m["q"] != 0.04 || m["steps"] != 2250.0 {
		t.Errorf("JSON %v", m)
	}
	// Mironov's conversion gives 8.0738 (tolerance 1e-4).
	m = accountJSON(t, "-q", "0.04", "-sigma", "1.5", "-steps", "2250", "-delta", "1e-5", "-orders", orders, "-accountant", "rdp-mironov")
	if e := m["epsilon"].(float64); math.Abs(e-8.0738) > 1e-4 || m["accountant"] != "rdp-mironov" {
		t.Errorf("Mironov: %v", m)
	}
}

func jsonNum(x float64) string {
	b, _ := json.Marshal(x)
	return string(b)
}

func TestAccountCalibrate(t *testing.T) {
	// Choquette-Choo et al. 2023 Table 4 in unnormalized units: k = 6 participations without
	// amplification → sensitivity √6; σ for ε = 1 at δ = 1e-6 is 4.22468·√6
	// (noise multiplier 4.22468, tolerance 6e-6 on the 5-decimal table).
	m := accountJSON(t, "-epsilon", "1", "-delta", "1e-6", "-sensitivity", jsonNum(math.Sqrt(6)), "-tol", "1e-8")
	nm := m["noise_multiplier"].(float64)
	if math.Abs(nm-4.22468) > 6e-6 || math.Abs(m["sigma"].(float64)-nm*math.Sqrt(6)) > 1e-9 {
		t.Errorf("JSON %v: want noise multiplier 4.22468, sigma = 4.22468·√6", m)
	}
	if m["calibrated"] != true || m["epsilon"].(float64) > 1 || m["accountant"] != "exact-gdp" {
		t.Errorf("JSON %v", m)
	}
	if _, ok := m["order"]; ok {
		t.Errorf("exact accountant reports an order: %v", m)
	}
	// Kairouz et al. 2021 Table 4 DP-SGDM row: 1600 rounds, q = 100/342477, ε = 7.51 at δ = 1e-6
	// ↔ σ = 0.4 (the paper's σ has 1 decimal: tolerance 0.005).
	m = accountJSON(t, "-epsilon", "7.51", "-q", jsonNum(100.0/342477), "-steps", "1600", "-delta", "1e-6")
	if s := m["sigma"].(float64); math.Abs(s-0.4) > 0.005 || m["accountant"] != "rdp-cks" || m["order"] == nil {
		t.Errorf("Kairouz et al. 2021 calibration: %v", m)
	}
	// Text form names the calibration target and the tolerance.
	code, out, _ := runAccount(t, "-epsilon", "2", "-delta", "1e-6", "-accountant", "zcdp")
	if code != exitOK || !strings.Contains(out, "calibrated for ε = 2 at δ = 1e-06") || !strings.Contains(out, "(zcdp)") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestAccountAccountantOrdering(t *testing.T) {
	// zCDP >= RDP >= exact for the same Gaussian, through the command line.
	eps := map[string]float64{}
	for _, a := range []string{"exact", "rdp", "zcdp", "zcdp-cks"} {
		m := accountJSON(t, "-sigma", "2", "-steps", "10", "-delta", "1e-6", "-accountant", a)
		eps[a] = m["epsilon"].(float64)
	}
	if !(eps["zcdp"] > eps["rdp"] && eps["rdp"] > eps["exact"] && eps["zcdp-cks"] <= eps["rdp"]) {
		t.Errorf("epsilons %v", eps)
	}
}

func TestAccountPLD(t *testing.T) {
	// Independent implementation (float64): Kairouz et al. 2021 q = 100/342,477, 1600 rounds, σ = 0.4 → PLD 6.06 (tolerance 0.01).
	m := accountJSON(t, "-sigma", "0.4", "-q", jsonNum(100.0/342477), "-steps", "1600", "-delta", "1e-6", "-accountant", "pld")
	if e := m["epsilon"].(float64); math.Abs(e-6.06) > 0.01 || m["accountant"] != "pld" {
		t.Errorf("JSON %v, want epsilon 6.06", m)
	}
	// The optimistic estimate brackets the exact value from below, tightly.
	if lo, ok := m["epsilon_optimistic"].(float64); !ok || !(lo <= m["epsilon"].(float64)) || lo < m["epsilon"].(float64)*(1-1e-3) {
		t.Errorf("JSON %v: epsilon_optimistic missing or not just below epsilon", m)
	}
	// The text form prints the bracket, saying which end is the guarantee.
	code, out, _ := runAccount(t, "-sigma", "4", "-q", "0.02048", "-steps", "10000", "-delta", "1e-5", "-accountant", "pld")
	if code != exitOK || !strings.Contains(out, "exact ε in [2.092") || !strings.Contains(out, "only the upper end is a guarantee") {
		t.Errorf("text output %q", out)
	}
	// Calibration with the PLD, 20 sampled steps: the pilot calibration
	// keeps it to a few evaluations of the full PLD.
	m = accountJSON(t, "-accountant", "pld", "-epsilon", "4", "-q", "0.1", "-steps", "20", "-delta", "1e-5")
	if e := m["epsilon"].(float64); e > 4 || e < 4-1e-4 || m["epsilon_optimistic"] == nil {
		t.Errorf("calibrated JSON %v", m)
	}
}

func TestAccountRDPSeries(t *testing.T) {
	// dp_accounting's RDP vector (σ = 2.5, q = 0.01, 50 steps) at order 1.5:
	// the signed series (6.501e-4 RDP) and the absolute one (6.706e-4)
	// differ, so the epsilons at that order differ, the abs one larger.
	args := []string{"-sigma", "2.5", "-q", "0.01", "-steps", "50", "-delta", "1e-5", "-orders", "1.5"}
	signed := accountJSON(t, args...)
	abs := accountJSON(t, append(args, "-rdp-series", "abs")...)
	es, ea := signed["epsilon"].(float64), abs["epsilon"].(float64)
	// ε = rdp + log(1 - 1/α) - (log δ + log α)/(α-1) with α = 1.5.
	conv := func(rdp float64) float64 { return rdp + math.Log(1-1/1.5) - (math.Log(1e-5)+math.Log(1.5))/0.5 }
	if math.Abs(es-conv(6.501e-4)) > 2e-7 || math.Abs(ea-conv(6.706e-4)) > 2e-7 || signed["rdp_series"] != "signed" || abs["rdp_series"] != "abs" {
		t.Errorf("signed %v, abs %v", signed, abs)
	}
	// jax_privacy's RDP vector (dp_accounting, its order grid: 50 points in
	// [1.01, 8], 8..63, 10 points in [65, 512]; σ = 4, q = 1024/50,000,
	// 10,000 steps, δ = 1e-5) is 2.27535 (rtol 1e-5); the optimum is at the
	// integer order 9, where both conventions agree.
	var orders []string
	for i := 0; i < 50; i++ {
		orders = append(orders, strconv.FormatFloat(1.01+(8-1.01)*float64(i)/49, 'g', -1, 64))
	}
	for a := 8; a < 64; a++ {
		orders = append(orders, strconv.Itoa(a))
	}
	for i := 0; i < 10; i++ {
		orders = append(orders, strconv.Itoa(int(65+(512-65)*float64(i)/9)))
	}
	for _, series := range []string{"signed", "abs"} {
		m := accountJSON(t, "-sigma", "4", "-q", "0.02048", "-steps", "10000", "-delta", "1e-5", "-orders", strings.Join(orders, ","), "-rdp-series", series)
		if e := m["epsilon"].(float64); math.Abs(e-2.27535) > 2.27535e-5 {
			t.Errorf("%s: ε = %.7f, jax_privacy 2.27535", series, e)
		}
	}
}

func TestAccountUsageErrors(t *testing.T) {
	cases := [][]string{
		{},
		{"-json"},
		{"-sigma", "1"}, // no delta
		{"-sigma", "1", "-epsilon", "1", "-delta", "1e-6"}, // both
		{"-delta", "1e-6"}, // neither
		{"-sigma", "0", "-delta", "1e-6"},
		{"-sigma", "1", "-delta", "1"},
		{"-sigma", "1", "-delta", "1e-6", "-steps", "0"},
		{"-sigma", "1", "-delta", "1e-6", "-sensitivity", "-2"},
		{"-sigma", "1", "-delta", "1e-6", "-mechanism", "laplace"},
		{"-sigma", "1", "-delta", "1e-6", "-mechanism", "sampled-gaussian"},
		{"-sigma", "1", "-delta", "1e-6", "-mechanism", "gaussian", "-q", "0.1"},
		{"-sigma", "1", "-delta", "1e-6", "-q", "1.5"},
		{"-sigma", "1", "-delta", "1e-6", "-q", "0.1", "-accountant", "exact"},
		{"-sigma", "1", "-delta", "1e-6", "-q", "0.1", "-accountant", "zcdp"},
		{"-sigma", "1", "-delta", "1e-6", "-accountant", "prv"},
		{"-sigma", "1", "-delta", "1e-6", "-accountant", "pld", "-orders", "2,3"},
		{"-sigma", "1", "-delta", "1e-6", "-accountant", "rdp", "-orders", "2,0.5"},
		{"-sigma", "1", "-delta", "1e-6", "-orders", "2,3"},
		{"-sigma", "1", "-delta", "1e-6", "-q", "0.1", "-rdp-series", "exact"},
		{"-sigma", "1", "-delta", "1e-6", "-accountant", "pld", "-rdp-series", "abs"},
		{"-sigma", "x", "-delta", "1e-6"},
		{"-bogus"},
		{"a.yaml", "b.yaml"},
		{"a.yaml", "-sigma", "1"},
	}
	for _, args := range cases {
		code, out, errs := runAccount(t, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		if out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "dpfl account: ") {
			t.Errorf("%v: stdout %q, stderr %q; want one line on stderr", args, out, errs)
		}
	}
}

func TestAccountFailures(t *testing.T) {
	// A target no σ can reach: exit 1 with one line naming the target.
	code, out, errs := runAccount(t, "-epsilon", "1e-9", "-steps", "1000000000", "-delta", "1e-6")
	if code != exitFailure || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "ε = 1e-09 at δ = 1e-06") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestAccountHelp(t *testing.T) {
	code, _, errs := runAccount(t, "-h")
	if code != exitOK || !strings.Contains(errs, "dpfl account -delta D") || !strings.Contains(errs, "-accountant") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"help", "account"}, &out, &errb); code != exitOK {
		t.Errorf("dpfl help account: exit %d", code)
	}
}

func TestAccountConfigForm(t *testing.T) {
	// One positional argument goes to accountConfig (implemented in
	// account_config.go); whatever it answers, the calculator must not.
	code, out, errs := runAccount(t, "/nonexistent/config.yaml", "-json")
	if code == exitUsage && strings.Contains(errs, "calculator") {
		t.Errorf("config form treated as calculator: exit %d, %q %q", code, out, errs)
	}
	if strings.Contains(out, `"epsilon"`) && strings.Contains(out, `"mechanism"`) && code == exitOK {
		t.Errorf("nonexistent config produced a calculator answer: %q", out)
	}
}

// TestAccountCalculatorExtremes: the calculator answers or refuses at once
// at the extremes of its flags. A tolerance below float64's resolution is
// refused naming -tol (it used to search forever); 1e-15 at σ in the
// thousands answers (the bracket on ln σ cannot get that narrow there); the
// PLD at σ = 1e-8 answers (it used to ask for 15 TB) with an ε at least
// the exact one's; sampled PLD at ε = 1e5 answers or refuses in one line.
func TestAccountCalculatorExtremes(t *testing.T) {
	type result struct {
		code     int
		out, err string
	}
	call := func(args ...string) result {
		t.Helper()
		done := make(chan result, 1)
		go func() {
			code, out, errs := runAccount(t, args...)
			done <- result{code, out, errs}
		}()
		select {
		case r := <-done:
			return r
		case <-time.After(20 * time.Second):
			t.Fatalf("dpfl account %s: no answer within 20 s", strings.Join(args, " "))
		}
		return result{}
	}
	for _, acct := range []string{"exact", "pld"} {
		r := call("-mechanism", "gaussian", "-epsilon", "1", "-delta", "1e-6", "-accountant", acct, "-tol", "1e-300")
		if r.code != exitUsage || !strings.Contains(r.err, "-tol") || strings.Count(r.err, "\n") != 1 {
			t.Errorf("-tol 1e-300 (%s): exit %d, stderr %q", acct, r.code, r.err)
		}
	}
	for _, eps := range []string{"0.001", "1e-05"} {
		m := accountJSON(t, "-mechanism", "gaussian", "-epsilon", eps, "-delta", "1e-10", "-accountant", "exact", "-tol", "1e-15")
		if e, _ := strconv.ParseFloat(eps, 64); m["epsilon"].(float64) > e || m["sigma"].(float64) < 2981 {
			t.Errorf("ε = %s at tol 1e-15: %v", eps, m)
		}
	}
	exact := accountJSON(t, "-sigma", "1e-8", "-delta", "1e-6")
	pld := accountJSON(t, "-sigma", "1e-8", "-delta", "1e-6", "-accountant", "pld")
	if e, p := exact["epsilon"].(float64), pld["epsilon"].(float64); !(p >= e) {
		t.Errorf("σ = 1e-8: PLD ε %v below the exact %v", p, e)
	}
	r := call("-q", "0.01", "-epsilon", "1e5", "-delta", "1e-6", "-accountant", "pld")
	if r.code != exitOK && (r.code != exitFailure || strings.Count(r.err, "\n") != 1) {
		t.Errorf("sampled PLD at ε = 1e5: exit %d, stderr %q", r.code, r.err)
	}
}
