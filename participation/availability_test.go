package participation

import (
	"math"
	"strings"
	"testing"

	"dpfl/sim/rng"
)

// TestDiurnalCurve: measured over a simulated day, the fraction of one time
// zone's clients that is eligible at each local hour follows
// DiurnalSpec.ExpectedFraction (within 0.02 absolute, about 5 standard
// errors for 20,000 clients and the window correlation); shifting the zone by
// 6 hours shifts the curve (negative control: the unshifted curve no longer
// fits).
func TestDiurnalCurve(t *testing.T) {
	spec := DiurnalSpec{Zones: []TimeZone{{Offset: 0, Weight: 1}}, PeakHour: 2, Peak: 0.8, Trough: 0.1, WindowHours: 2}
	const n = 20000
	d, err := NewDiurnal(spec, n, rng.New(4))
	if err != nil {
		t.Fatal(err)
	}
	shifted, _ := NewDiurnal(DiurnalSpec{Zones: []TimeZone{{Offset: 6, Weight: 1}}, PeakHour: 2, Peak: 0.8, Trough: 0.1, WindowHours: 2}, n, rng.New(4))
	worstShift := 0.0
	for h := 0; h < 24; h++ {
		ts := float64(h)*3600 + 1800 + 24*3600 // day 1, half past the hour (UTC = local for offset 0)
		cnt, cntShift := 0, 0
		for c := 0; c < n; c++ {
			if d.Available(c, ts) {
				cnt++
			}
			if shifted.Available(c, ts) {
				cntShift++
			}
		}
		local := float64(h) + 0.5
		if got, want := float64(cnt)/n, spec.ExpectedFraction(local); math.Abs(got-want) > 0.02 {
			t.Errorf("hour %.1f: eligible fraction %.4f, want %.4f", local, got, want)
		}
		if got, want := float64(cntShift)/n, spec.ExpectedFraction(local+6); math.Abs(got-want) > 0.02 {
			t.Errorf("shifted zone, UTC hour %.1f: eligible fraction %.4f, want %.4f", local, got, want)
		}
		worstShift = math.Max(worstShift, math.Abs(float64(cntShift)/n-spec.ExpectedFraction(local)))
	}
	if worstShift < 0.1 {
		t.Fatalf("negative control: a 6-hour shift changed the curve by at most %.3f", worstShift)
	}
}

func TestDiurnalZonesDrawnByWeight(t *testing.T) {
	spec := DiurnalSpec{Zones: []TimeZone{{Offset: -5, Weight: 1}, {Offset: 8, Weight: 3}}, Peak: 1, Trough: 0, WindowHours: 4}
	d, err := NewDiurnal(spec, 8000, rng.New(1))
	if err != nil {
		t.Fatal(err)
	}
	east := 0
	for c := 0; c < 8000; c++ {
		switch d.Offset(c) {
		case 8:
			east++
		case -5:
		default:
			t.Fatalf("offset %v not in the distribution", d.Offset(c))
		}
	}
	if f := float64(east) / 8000; math.Abs(f-0.75) > 0.025 { // SE 0.005
		t.Fatalf("fraction in UTC+8: %.3f, want 0.75", f)
	}
	for _, bad := range []DiurnalSpec{{Peak: 1.5, WindowHours: 1}, {Peak: 0.5, Trough: 0.6, WindowHours: 1}, {Peak: 0.5, WindowHours: 0}, {Peak: 0.5, WindowHours: 1, Zones: []TimeZone{{Offset: 20, Weight: 1}}}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestTrace(t *testing.T) {
	tr, err := ReadTrace(strings.NewReader("client,start,end\n# comment\n3, 10, 20\n3,15,30\n3,50,60\n\n1,0,5\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c    int
		ts   float64
		want bool
	}{{3, 10, true}, {3, 29.9, true}, {3, 30, false}, {3, 55, true}, {3, 9, false}, {1, 0, true}, {1, 5, false}, {2, 1, false}} {
		if got := tr.Available(c.c, c.ts); got != c.want {
			t.Errorf("Available(%d, %v) = %v", c.c, c.ts, got)
		}
	}
	if tr.MaxClient() != 3 {
		t.Fatalf("max client %d", tr.MaxClient())
	}
	bad := map[string]string{
		"1,2\n":            "line 1: want 3 fields",
		"0,0,1\nx,0,1\n":   `line 2: client "x"`,
		"0,0,1\n0,a,1\n":   "line 2: start",
		"0,0,1\n\n0,5,5\n": "line 3: start 5 must be before end 5",
		"0,0,1\n-1,0,1\n":  "line 2: client",
		"0,0,NaN\n":        "line 1: start",
	}
	for in, want := range bad {
		if _, err := ReadTrace(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

// BenchmarkDiurnalMinSep plans a large diurnal population: 10,000 diurnal clients
// in 3 time zones, cohort 100, 2,000 rounds of 5 simulated minutes, b = 200
// min-sep with k = 10; it reports the mean cohort fill and participations.
func BenchmarkDiurnalMinSep(b *testing.B) {
	spec := DiurnalSpec{Zones: []TimeZone{{-5, 1}, {1, 1}, {8, 1}}, PeakHour: 2, Peak: 0.8, Trough: 0.05, WindowHours: 4}
	var st Stats
	for i := 0; i < b.N; i++ {
		d, err := NewDiurnal(spec, 10000, rng.New(1))
		if err != nil {
			b.Fatal(err)
		}
		p := Planner{Schema: Schema{Kind: MinSep, K: 10, B: 200}, Cohort: 100, Avail: d, Clock: Clock{RoundSeconds: 300}}
		s, err := p.Plan(10000, 2000, rng.New(1))
		if err != nil {
			b.Fatal(err)
		}
		st = s.Stats()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/round")
	b.ReportMetric(st.MeanFill, "mean-fill")
	b.ReportMetric(st.MeanCohort*2000/10000, "participations/client")
	b.ReportMetric(float64(st.MaxParticipations), "max-participations")
	b.ReportMetric(float64(st.MinSeparation), "min-separation")
}
