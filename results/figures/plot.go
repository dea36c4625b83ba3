package figures

import (
	"encoding/base64"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"

	"dpfl/results"
)

// Files written by Write into a results folder: the figures each as
// NAME.png (300 dpi) and NAME.pdf.
const (
	EpsilonFigure = "accuracy_vs_epsilon"
	RoundFigure   = "accuracy_vs_round"
	BestTable     = "best.csv"
	ReportFile    = "report.html"
)

// Write summarizes dir's grid and writes the figures, best.csv,
// report.html (the figures embedded), comparisons.csv and rounds.csv (every
// run's metrics in one table, results.WriteRounds) into it; it returns the
// paths written.
func Write(dir string, o Options) ([]string, error) {
	s, err := Summarize(dir, o)
	if err != nil {
		return nil, err
	}
	eps, err := s.epsilonFigure()
	if err != nil {
		return nil, err
	}
	rounds, err := s.roundFigure(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	var embed []embedded
	for _, f := range []struct {
		name string
		fig  figure
	}{{EpsilonFigure, eps}, {RoundFigure, rounds}} {
		ps, err := f.fig.saveBoth(filepath.Join(dir, f.name))
		if err != nil {
			return nil, err
		}
		paths = append(paths, ps...)
		img, err := f.fig.png(reportDPI)
		if err != nil {
			return nil, err
		}
		embed = append(embed, embedded{f.name, img})
	}
	paths = append(paths, filepath.Join(dir, BestTable), filepath.Join(dir, ReportFile))
	if err := s.WriteBest(paths[len(paths)-2]); err != nil {
		return nil, err
	}
	if err := s.Report(dir, paths[len(paths)-1], embed); err != nil {
		return nil, err
	}
	cmp := filepath.Join(dir, ComparisonsTable)
	if err := s.WriteComparisons(cmp); err != nil {
		return nil, err
	}
	roundsPath, err := results.WriteRounds(dir)
	if err != nil {
		return nil, err
	}
	return append(paths, cmp, roundsPath), nil
}

// embedded is a figure's PNG for report.html, which embeds it as a data
// URI so that the page stands alone.
type embedded struct {
	name string
	png  []byte
}

// Report writes a small HTML page that stands alone: the figures embedded
// as PNG data URIs, the best-point table and every run's privacy (epsilon
// with its accountant and delta, sigma, sensitivity, participation) and
// result, numbers rounded for reading (epsilons to 3 significant digits,
// metrics to 4 decimals; best.csv and index.csv keep them in full).
func (s *Summary) Report(dir, path string, figs []embedded) error {
	var b strings.Builder
	name := filepath.Base(dir)
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>%s</title>\n", esc(name))
	b.WriteString("<style>body{font-family:sans-serif;max-width:72em;margin:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:last-child{text-align:left}img{max-width:100%}</style>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(name))
	fmt.Fprintf(&b, "<p>Every ε here is accounted by %s.</p>\n", esc(s.EpsilonNote()))
	for _, f := range figs {
		fmt.Fprintf(&b, "<p><img src=\"data:image/png;base64,%s\" alt=\"%s\"><br><small>Also as %s.png (300 dpi) and %s.pdf.</small></p>\n",
			base64.StdEncoding.EncodeToString(f.png), esc(f.name), esc(f.name), esc(f.name))
	}
	s.reportBest(&b)
	if s.Skipped > 0 {
		fmt.Fprintf(&b, "<p>%d runs not finished (see index.csv).</p>\n", s.Skipped)
	}
	if n := s.withheldNote(); n != "" {
		fmt.Fprintf(&b, "<p>%s</p>\n", html.EscapeString(n))
	}
	s.reportRuns(&b)
	b.WriteString("<p>All runs: <a href=\"index.csv\">index.csv</a>; the plotted points in full precision: <a href=\"best.csv\">best.csv</a>.</p>\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return results.WriteFileAtomic(path, []byte(b.String()))
}

// reportBest writes the table of the plotted points.
func (s *Summary) reportBest(b *strings.Builder) {
	esc := html.EscapeString
	xh := esc(s.XCol)
	if lab := s.axisLabel(s.XCol); lab != label(s.XCol) {
		xh = esc(s.XCol) + "<br><small>" + esc(s.EpsilonNote()) + "</small>"
	}
	chosenOn := ""
	if s.SelectCol != s.YCol {
		chosenOn = " on " + esc(s.SelectCol)
	}
	fmt.Fprintf(b, "<h2>Best hyperparameters per point</h2>\n<p>Chosen%s; the interval is the 95%% Student-t interval of the mean over seeds.</p>\n<table>\n<tr><th>%s</th><th>%s</th><th>mean %s</th><th>95%% interval</th><th>min</th><th>max</th><th>seeds</th><th>δ</th><th>accountant</th><th>σ</th><th>sensitivity</th><th>participation</th><th>at an edge</th><th>chosen</th></tr>\n",
		chosenOn, esc(s.ByCol), xh, esc(s.YCol))
	y := func(v float64) string { return fmtCell(s.YCol, strconv.FormatFloat(v, 'g', -1, 64)) }
	for _, p := range append(append([]Point{}, s.Points...), s.Baselines...) {
		ci := "—"
		if !math.IsNaN(p.CILow) {
			ci = "[" + y(p.CILow) + ", " + y(p.CIHigh) + "]"
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			esc(p.Series), esc(fmtX(s.XCol, p.X)), y(p.Mean), ci, y(p.Min), y(p.Max), p.Seeds, esc(fmtCells("delta", p.Delta)), esc(p.Accountant),
			esc(fmtCells("noise_multiplier", p.Sigma)), esc(fmtCells("sensitivity", p.Sensitivity)), esc(p.Participation), esc(strings.Join(p.Edges, "; ")), esc(p.Hyper))
	}
	b.WriteString("</table>\n")
}

// reportRuns writes the table of every run in the index.
func (s *Summary) reportRuns(b *strings.Builder) {
	t := s.index
	if t == nil {
		return
	}
	esc := html.EscapeString
	cols := []string{"run_id", "status", "aggregator.kind", "participation.kind", "seed", "epsilon", "delta", "accountant", "noise_multiplier", "sensitivity", "final_accuracy", "population_epsilon"}
	heads := map[string]string{"noise_multiplier": "σ", "delta": "δ", "epsilon": "ε", "aggregator.kind": "aggregator", "participation.kind": "participation"}
	b.WriteString("<h2>All runs</h2>\n<table>\n<tr>")
	var shown []string
	for _, c := range cols {
		if !t.Has(c) || (c == "population_epsilon" && !s.PopulationX) {
			continue
		}
		shown = append(shown, c)
		h := c
		if v, ok := heads[c]; ok {
			h = v
		}
		fmt.Fprintf(b, "<th>%s</th>", esc(h))
	}
	b.WriteString("</tr>\n")
	for i := range t.Rows {
		b.WriteString("<tr>")
		for _, c := range shown {
			v := t.Get(i, c)
			if c == "run_id" && t.Get(i, "dir") != "" {
				fmt.Fprintf(b, "<td><a href=\"%s/\">%s</a></td>", esc(t.Get(i, "dir")), esc(v))
				continue
			}
			fmt.Fprintf(b, "<td>%s</td>", esc(fmtCell(c, v)))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// fmtCell rounds a number of column col for reading: epsilons and deltas
// to 3 significant digits, σ and sensitivities to 4, accuracies and losses
// to 4 decimals; anything else, and what is not a finite number, as it is.
func fmtCell(col, v string) string {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return v
	}
	switch {
	case strings.Contains(col, "epsilon"), col == "delta":
		return sig(x, 3)
	case col == "noise_multiplier", col == "sensitivity":
		return sig(x, 4)
	case strings.Contains(col, "accuracy"), strings.HasSuffix(col, "loss"):
		return strconv.FormatFloat(x, 'f', 4, 64)
	}
	return v
}

// fmtCells is fmtCell of each of the " / "-joined values of v.
func fmtCells(col, v string) string {
	parts := strings.Split(v, " / ")
	for i, p := range parts {
		parts[i] = fmtCell(col, p)
	}
	return strings.Join(parts, " / ")
}

// valueTicks labels the x axis at the plotted x values.
type valueTicks []float64

// Ticks implements plot.Ticker.
func (v valueTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for _, x := range v {
		if x >= lo && x <= hi {
			t = append(t, plot.Tick{Value: x, Label: sig(x, 3)})
		}
	}
	return t
}

// xTitle names x in the figure's title (the axis label can be longer).
func (s *Summary) xTitle() string { return label(s.XCol) }

// xLabel names the x axis: with a population epsilon as the grid's x, the
// runs' own epsilon (PopulationX).
func (s *Summary) xLabel() string {
	if s.PopulationX {
		return "ε of these runs (" + s.EpsilonNote() + ")"
	}
	return s.axisLabel(s.XCol)
}

// populationNote says, for a grid calibrated for a larger population, what
// the targets were: the axis is the runs' own epsilon.
func (s *Summary) populationNote() string {
	if !s.PopulationX {
		return ""
	}
	var targets []string
	for _, p := range s.Points {
		if v := sig(p.Target, 3); !slices.Contains(targets, v) {
			targets = append(targets, v)
		}
	}
	return "Noise calibrated for a population larger than these runs' (privacy.population_scale), at ε = " +
		strings.Join(targets, ", ") + " there; the axis is the ε of these runs' own clients."
}

// axisLabel is label(col), followed for an epsilon column by the accountant
// and delta it was accounted with.
func (s *Summary) axisLabel(col string) string {
	switch col {
	case "privacy.epsilon", "epsilon", "population_epsilon":
		return label(col) + " (" + s.EpsilonNote() + ")"
	}
	return label(col)
}

func label(col string) string {
	switch col {
	case "privacy.epsilon", "epsilon":
		return "ε"
	case "population_epsilon":
		return "ε of the simulated larger population (privacy.population_scale)"
	case "final_accuracy":
		return "final test accuracy"
	case "best_accuracy":
		return "best test accuracy"
	case "final_test_loss":
		return "final test loss"
	case "audit_rounds_epsilon":
		return "empirical ε, every round observed (canaries)"
	case "audit_final_epsilon":
		return "empirical ε, final model observed (canaries)"
	}
	return col
}

func shortLabel(col string) string {
	if l := label(col); l != col {
		return l
	}
	if i := strings.LastIndexByte(col, '.'); i >= 0 {
		return col[i+1:]
	}
	return col
}
