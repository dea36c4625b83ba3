package figures

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dpfl/results"
)

// writeGrid writes an index.csv (and metrics.csv per run) where server.lr
// = 1 wins at epsilon 2 and lr = 0.5 wins at epsilon 8, two seeds each, plus
// a non-private baseline and an unfinished run.
func writeGrid(t *testing.T) string {
	dir := t.TempDir()
	header := append(append([]string{}, indexColumns...), "privacy.epsilon", "server.lr", "seed")
	acc := map[string]float64{ // aggregator/eps/lr → accuracy of seed 1 (seed 2 is 0.02 lower)
		"dpfedavg/2/0.5": 0.60, "dpfedavg/2/1": 0.70, "dpfedavg/8/0.5": 0.85, "dpfedavg/8/1": 0.80,
		"tree/2/0.5": 0.72, "tree/2/1": 0.75, "tree/8/0.5": 0.88, "tree/8/1": 0.70,
	}
	var rows [][]string
	n := 0
	add := func(agg, eps, lr, seed string, a float64, status string) {
		n++
		d := "run-" + string(rune('a'+n))
		row := map[string]string{"run_id": d, "dir": d, "status": status, "aggregator.kind": agg, "seed": seed,
			"epsilon": eps, "delta": "1e-05", "accountant": "rdp-cks", "noise_multiplier": "1.5", "sensitivity": "1",
			"participation.kind": "poisson", "final_accuracy": strconv.FormatFloat(a, 'g', -1, 64),
			"final_test_loss": strconv.FormatFloat(1-a, 'g', -1, 64)}
		var rec []string
		for _, h := range indexColumns {
			rec = append(rec, row[h])
		}
		rec = append(rec, eps, lr, seed)
		rows = append(rows, rec)
		m := results.NewMetrics(filepath.Join(dir, d, "metrics.csv"))
		m.Add(results.MetricsRow{Round: 5, TestAccuracy: a / 2})
		m.Add(results.MetricsRow{Round: 10, TestAccuracy: a})
		if err := m.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for _, agg := range []string{"dpfedavg", "tree"} {
		for _, eps := range []string{"2", "8"} {
			for _, lr := range []string{"0.5", "1"} {
				a := acc[agg+"/"+eps+"/"+lr]
				add(agg, eps, lr, "1", a, "complete")
				add(agg, eps, lr, "2", a-0.02, "complete")
			}
		}
	}
	add("dpfedavg", "inf", "1", "1", 0.9, "complete")
	add("tree", "4", "1", "1", 0.99, "pending")
	if err := results.WriteCSV(filepath.Join(dir, "index.csv"), header, rows); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSummarizeBestHyperparameters(t *testing.T) {
	dir := writeGrid(t)
	s, err := Summarize(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.XCol != "privacy.epsilon" || s.YCol != "final_accuracy" || s.ByCol != "aggregator.kind" {
		t.Errorf("columns %s, %s, %s", s.XCol, s.YCol, s.ByCol)
	}
	if len(s.Hyper) != 1 || s.Hyper[0] != "server.lr" {
		t.Errorf("hyperparameters %v, want [server.lr]", s.Hyper)
	}
	want := []struct {
		series string
		x      float64
		mean   float64
		hyper  string
	}{
		{"dpfedavg", 2, 0.69, "server.lr=1"},
		{"dpfedavg", 8, 0.84, "server.lr=0.5"},
		{"tree", 2, 0.74, "server.lr=1"},
		{"tree", 8, 0.87, "server.lr=0.5"},
	}
	if len(s.Points) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(s.Points), len(want), s.Points)
	}
	for i, w := range want {
		p := s.Points[i]
		if p.Series != w.series || p.X != w.x || math.Abs(p.Mean-w.mean) > 1e-12 || p.Hyper != w.hyper || p.Seeds != 2 ||
			math.Abs(p.Max-p.Min-0.02) > 1e-12 {
			t.Errorf("point %d = %+v, want %+v with seeds 2 and range 0.02", i, p, w)
		}
	}
	if len(s.Baselines) != 1 || s.Baselines[0].Mean != 0.9 || s.Skipped != 1 {
		t.Errorf("baselines %+v, skipped %d; want one at 0.9 and one skipped run", s.Baselines, s.Skipped)
	}
	if _, err := Summarize(dir, Options{By: "nope"}); err == nil || !strings.Contains(err.Error(), `no column "nope"`) {
		t.Errorf("unknown column: %v", err)
	}
}

// TestSummarizeLossLowerIsBetter: with y = loss the best hyperparameters
// are those with the lowest mean loss (here 1 − accuracy, so the same
// choices as for accuracy; picking the highest would choose the others).
func TestSummarizeLossLowerIsBetter(t *testing.T) {
	dir := writeGrid(t)
	s, err := Summarize(dir, Options{Y: "loss"})
	if err != nil {
		t.Fatal(err)
	}
	if s.YCol != "final_test_loss" || !LowerIsBetter(s.YCol) || LowerIsBetter("final_accuracy") {
		t.Fatalf("y column %s", s.YCol)
	}
	want := map[string]string{"dpfedavg/2": "server.lr=1", "dpfedavg/8": "server.lr=0.5", "tree/2": "server.lr=1", "tree/8": "server.lr=0.5"}
	mean := map[string]float64{"dpfedavg/2": 0.31, "dpfedavg/8": 0.16, "tree/2": 0.26, "tree/8": 0.13}
	if len(s.Points) != len(want) {
		t.Fatalf("%d points, want %d", len(s.Points), len(want))
	}
	for _, p := range s.Points {
		k := p.Series + "/" + strconv.FormatFloat(p.X, 'g', -1, 64)
		if p.Hyper != want[k] || math.Abs(p.Mean-mean[k]) > 1e-12 {
			t.Errorf("%s: %s mean %.4f, want %s mean %.4f", k, p.Hyper, p.Mean, want[k], mean[k])
		}
	}
}

// TestWriteFigures: Write draws each grid figure as a PNG of at least
// 300 dpi at a paper column's width and as a PDF (the same bytes when
// written again: no clock in the file), and report.html embeds the
// figures, so that it stands alone.
func TestWriteFigures(t *testing.T) {
	dir := writeGrid(t)
	paths, err := Write(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{EpsilonFigure + ".png", EpsilonFigure + ".pdf", RoundFigure + ".png", RoundFigure + ".pdf", BestTable, ReportFile, ComparisonsTable, results.RoundsFile}
	if len(paths) != len(want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	// rounds.csv: each finished run's two evaluated rounds, with its
	// varied values.
	idx, _ := results.ReadIndex(filepath.Join(dir, "index.csv"))
	rounds, err := results.ReadTable(filepath.Join(dir, results.RoundsFile))
	finished := 0
	for i := range idx.Rows {
		if idx.Get(i, "status") == "complete" {
			finished++
		}
	}
	if err != nil || len(rounds.Rows) != 2*finished || !rounds.Has("server.lr") || rounds.Get(1, "round") != "10" || rounds.Get(1, "server.lr") != idx.Get(0, "server.lr") {
		t.Errorf("rounds.csv: %v, %v; want 2 rows for each of %d finished runs", rounds, err, finished)
	}
	pdfs := map[string][]byte{}
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Errorf("path %d = %s, want %s", i, p, want[i])
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(p) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			// 3.5 inches at 300 dpi at least, and as tall as wide at most twice.
			if bd := img.Bounds(); bd.Dx() < 1050 || bd.Dy() < 600 || bd.Dy() > 2*bd.Dx() {
				t.Errorf("%s is %v, want at least 1050 px wide", p, bd)
			}
		case ".pdf":
			if !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.Contains(b, []byte("/CreationDate (D:"+fixedPDFDate+")")) {
				t.Errorf("%s: not a PDF with the fixed date: %.40q", p, b)
			}
			pdfs[p] = b
		}
	}
	if _, err := Write(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	for p, b := range pdfs {
		if again, _ := os.ReadFile(p); !bytes.Equal(again, b) {
			t.Errorf("%s differs when written again", p)
		}
	}
	// Structure: an SVG rendering carries the axis labels, the series, the
	// note on the bars and the seeds.
	s, _ := Summarize(dir, Options{})
	svg := filepath.Join(dir, "fig.svg")
	if err := s.PlotX(svg); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(svg)
	for _, want := range []string{"final test accuracy", "ε", ">dpfedavg<", ">tree<", "dpfedavg (no noise)", "95% Student-t interval", "Fewer than 3 seeds"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("figure has no %q", want)
		}
	}
	if strings.Contains(string(b), ">tree (no noise)<") {
		t.Error("figure shows a baseline the data does not have")
	}
	if err := s.PlotX(filepath.Join(dir, "fig.gif")); err == nil || !strings.Contains(err.Error(), "want a .png, .pdf or .svg file") {
		t.Errorf("unknown format: %v", err)
	}
	checkReportEmbeds(t, filepath.Join(dir, ReportFile))
	best, err := results.ReadTable(filepath.Join(dir, BestTable))
	if err != nil || len(best.Rows) != 5 {
		t.Fatalf("best.csv: %v, %d rows; want 4 points and 1 baseline", err, len(best.Rows))
	}
}

// checkReportEmbeds checks that the report shows both figures as PNG data
// URIs (no image file it would need beside it) and the chosen
// hyperparameters.
func checkReportEmbeds(t *testing.T, path string) {
	t.Helper()
	rep, _ := os.ReadFile(path)
	imgs := regexp.MustCompile(`<img src="([^"]*)" alt="([^"]*)"`).FindAllStringSubmatch(string(rep), -1)
	if len(imgs) != 2 || imgs[0][2] != EpsilonFigure || imgs[1][2] != RoundFigure {
		t.Fatalf("report images %d, want the two figures", len(imgs))
	}
	for _, m := range imgs {
		data, ok := strings.CutPrefix(m[1], "data:image/png;base64,")
		if !ok {
			t.Fatalf("%s: src %.40q is not a PNG data URI", m[2], m[1])
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: embedded PNG: %v", m[2], err)
		}
	}
	if !strings.Contains(string(rep), "server.lr=0.5") {
		t.Error("report lacks the chosen hyperparameters")
	}
}

// TestSummarizePopulationX: a grid over privacy.epsilon whose runs set
// privacy.population_scale (index column population_epsilon filled) is
// plotted against the runs' own epsilon (index column epsilon), never the
// population's, with the targets in a note.
func TestSummarizePopulationX(t *testing.T) {
	dir := writeGrid(t)
	s, err := Summarize(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.PopulationX || s.xLabel() != "ε (rdp-cks, δ = 1e-05)" {
		t.Errorf("plain grid: PopulationX %v, label %q", s.PopulationX, s.xLabel())
	}
	path := filepath.Join(dir, "index.csv")
	tab, err := results.ReadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]float64{}
	for i := range tab.Rows {
		tab.Rows[i][slices.Index(tab.Header, "population_epsilon")] = tab.Get(i, "privacy.epsilon")
		if target := parse(tab.Get(i, "privacy.epsilon")); !math.IsNaN(target) {
			own[tab.Get(i, "privacy.epsilon")] = 100 * target
			tab.Rows[i][slices.Index(tab.Header, "epsilon")] = strconv.FormatFloat(100*target, 'g', -1, 64)
		}
	}
	if err := results.WriteCSV(path, tab.Header, tab.Rows); err != nil {
		t.Fatal(err)
	}
	if s, err = Summarize(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if !s.PopulationX || s.xLabel() != "ε of these runs (rdp-cks, δ = 1e-05)" || !strings.Contains(s.populationNote(), "privacy.population_scale") {
		t.Errorf("population grid: PopulationX %v, label %q, note %q", s.PopulationX, s.xLabel(), s.populationNote())
	}
	for _, p := range s.Points {
		if p.X != 100*p.Target || p.Target == 0 || !strings.Contains(s.populationNote(), sig(p.Target, 3)) {
			t.Errorf("point %s: x %g, target %g: want the run's own epsilon (100 × target) on the axis", p.Series, p.X, p.Target)
		}
	}
	if len(own) == 0 {
		t.Fatal("no targets in the grid")
	}
}

// TestEpsilonLabels: every epsilon axis and the report name the accountant
// and delta; several accountants are listed; an index written before the
// accountant column existed still plots, and says the accountant is not
// recorded.
func TestEpsilonLabels(t *testing.T) {
	dir := writeGrid(t)
	if _, err := Write(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	rep, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	for _, want := range []string{"Every ε here is accounted by rdp-cks, δ = 1e-05.", "<th>δ</th><th>accountant</th><th>σ</th><th>sensitivity</th><th>participation</th>",
		"<td>1e-05</td><td>rdp-cks</td><td>1.5</td><td>1</td><td>poisson</td>", "<h2>All runs</h2>", `<a href="run-b/">run-b</a>`} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	path := filepath.Join(dir, "index.csv")
	tab, _ := results.ReadTable(path)
	ai := slices.Index(tab.Header, "accountant")
	tab.Rows[0][ai] = "pld"
	results.WriteCSV(path, tab.Header, tab.Rows)
	s, err := Summarize(dir, Options{})
	if err != nil || s.xLabel() != "ε (accountants pld, rdp-cks, δ = 1e-05)" {
		t.Errorf("mixed accountants: label %q, %v", s.xLabel(), err)
	}
	// The old layout: no accountant column.
	var hdr []string
	var rows [][]string
	for j, h := range tab.Header {
		if j != ai {
			hdr = append(hdr, h)
		}
	}
	for _, r := range tab.Rows {
		rows = append(rows, append(append([]string{}, r[:ai]...), r[ai+1:]...))
	}
	results.WriteCSV(path, hdr, rows)
	if s, err = Summarize(dir, Options{}); err != nil || s.xLabel() != "ε (accountant not recorded, δ = 1e-05)" {
		t.Errorf("old index: label %q, %v", s.xLabel(), err)
	}
	if _, err := Write(dir, Options{}); err != nil {
		t.Errorf("old index: %v", err)
	}
}

// TestBaselineWithUnsetTarget: a non-private point of a grid that varies
// privacy.epsilon has that key unset ("null" in index.csv) and epsilon inf:
// it is the series' no-noise baseline, not an error. A private row with an
// unreadable x stays an error (negative control).
func TestBaselineWithUnsetTarget(t *testing.T) {
	write := func(eps string) string {
		dir := t.TempDir()
		header := append(append([]string{}, indexColumns...), "privacy.epsilon")
		var rows [][]string
		for _, r := range [][3]string{{"a", "2", "2"}, {"b", "8", "8"}, {"c", eps, "null"}} {
			row := map[string]string{"run_id": r[0], "dir": r[0], "status": "complete", "aggregator.kind": "dpfedavg", "seed": "1",
				"epsilon": r[1], "final_accuracy": "0.5"}
			var rec []string
			for _, h := range indexColumns {
				rec = append(rec, row[h])
			}
			rows = append(rows, append(rec, r[2]))
		}
		if err := results.WriteCSV(filepath.Join(dir, "index.csv"), header, rows); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	s, err := Summarize(write("inf"), Options{})
	if err != nil || len(s.Points) != 2 || len(s.Baselines) != 1 {
		t.Fatalf("summary %+v, %v; want 2 points and 1 baseline", s, err)
	}
	if _, err := Summarize(write("3"), Options{}); err == nil || !strings.Contains(err.Error(), `privacy.epsilon is not set and the run is private`) {
		t.Errorf("private row without a target: %v", err)
	}
}

// indexColumns are every column an index.csv can have besides the varied
// paths: the test indexes write them all.
var indexColumns = append(append([]string{}, results.IndexFixedColumns...), results.IndexOptionalColumns...)

// TestRunEpsilonLabel: a run's ε figure is labelled from metrics.csv's
// accountant, delta, adjacency and scope columns, and from the column name
// of a file written before them.
func TestRunEpsilonLabel(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{strings.Join(results.MetricsHeader, ",") + "\nab,1,5,1,1,0.5,2,exact-gdp,1e-05,zero-out,whole_run,3,0,0\n",
			"ε (exact-gdp, δ = 1e-05, zero-out, whole run)"},
		{strings.Join(results.MetricsHeader, ",") + "\nab,1,5,1,1,0.5,2,rdp-cks,1e-06,add/remove,through_round,3,0,0\n",
			"ε (rdp-cks, δ = 1e-06, add/remove)"},
		{"round,train_loss,test_loss,test_accuracy,epsilon[rdp-cks;delta=1e-05],cohort,clip_fraction,noise_norm\n5,1,1,0.5,2,3,0,0\n",
			"ε (rdp-cks, δ = 1e-05)"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "metrics.csv"), []byte(c.file), 0o644)
		m, err := readRunMetrics(dir)
		if err != nil {
			t.Fatal(err)
		}
		if col, lab := m.epsilonColumn(dir); col != "epsilon" || lab != c.want || len(m.xy(col)) != 1 {
			t.Errorf("column %q label %q, want %q", col, lab, c.want)
		}
	}
}

// TestEpsilonNoteAdjacency: the epsilon label names the neighbouring
// relation from index.csv's adjacency column, each distinct one once.
func TestEpsilonNoteAdjacency(t *testing.T) {
	s := &Summary{Accountants: []string{"pld"}, Deltas: []string{"1e-05"}}
	if n := s.EpsilonNote(); n != "pld, δ = 1e-05" {
		t.Errorf("no adjacency recorded: %q", n)
	}
	dir := writeGrid(t)
	path := filepath.Join(dir, "index.csv")
	tab, err := results.ReadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	tab.Header = append(tab.Header, "adjacency")
	for i := range tab.Rows {
		tab.Rows[i] = append(tab.Rows[i], "zero-out")
	}
	if err := results.WriteCSV(path, tab.Header, tab.Rows); err != nil {
		t.Fatal(err)
	}
	got, err := Summarize(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.EpsilonNote(); !strings.HasSuffix(n, ", zero-out") || strings.Count(n, "zero-out") != 1 {
		t.Errorf("note %q, want the relation once at the end", n)
	}
}
