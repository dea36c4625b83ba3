// Package figures turns a grid's results folder (index.csv and the run
// folders' metrics.csv) into what researchers look at: accuracy against
// epsilon per aggregator (best hyperparameters per point, mean and spread over
// seeds), accuracy against round, a best.csv table of the plotted points and
// a report.html that embeds the figures. The figures are sized for a
// two-column paper (PNG at 300 dpi and PDF; SVG on request), in one style
// for grid and run figures (style.go).
//
// Every point is the mean over its seeds with a 95% Student-t confidence
// interval (mean ± t(0.975, n−1)·s/√n, s the sample standard deviation;
// none for one seed). Hyperparameters are chosen on a validation column
// when the index has one (final_val_accuracy: a held-out part of the test
// data disjoint from the part the y column is measured on), and a chosen
// numeric value at the edge of the values tried is flagged. A point some of
// whose runs have not finished is left out (Summary.Withheld) and named
// under the figure, so an interim figure shows finished points only.
//
// Package figures imports results, gonum.org/v1/plot and gonum's
// stat/distuv only.
package figures

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"dpfl/results"
)

// Options choose what is plotted. Column names are index.csv's: a fixed
// column (epsilon, aggregator, seed, final_accuracy, ...) or a varied dotted
// path (server.lr); a short name also matches the varied path it ends or
// starts with, and the aliases below apply.
type Options struct {
	X  string // default "epsilon" (the target privacy.epsilon when varied)
	Y  string // default "accuracy" (final test accuracy)
	By string // series; default "aggregator"
	// Select is the column the hyperparameters are chosen on (the best
	// mean over seeds); default: final_val_accuracy when the index has it
	// and y is the final test accuracy, else y.
	Select string
}

// aliases map the short names of the command line to index columns, most
// specific first.
var aliases = map[string][]string{
	"epsilon":       {"privacy.epsilon", "epsilon"},
	"accuracy":      {"final_accuracy"},
	"best":          {"best_accuracy"},
	"loss":          {"final_test_loss"},
	"aggregator":    {"aggregator.kind"},
	"participation": {"participation.kind"},
	"sigma":         {"noise_multiplier"},
	"validation":    {"final_val_accuracy"},
}

// fixedTwin names the varied path that a fixed column restates: it is not a
// hyperparameter when the fixed column is the axis or the series.
var fixedTwin = map[string]string{"epsilon": "privacy.epsilon", "population_epsilon": "privacy.epsilon"}

// LowerIsBetter reports whether smaller values of the index column are
// better: losses (final_test_loss).
func LowerIsBetter(col string) bool { return strings.HasSuffix(col, "loss") }

// Point is one plotted point: the best hyperparameters' mean over seeds.
type Point struct {
	Series string
	X      float64
	Mean   float64
	Min    float64
	Max    float64
	// CILow and CIHigh bound the 95% Student-t confidence interval of the
	// mean over the reported seeds (NaN for one seed).
	CILow, CIHigh float64
	// Seeds counts the reported seeds: the chosen setting's seeds that took
	// no part in choosing it (see Summary.best); PerSeed holds their y.
	Seeds   int
	PerSeed []SeedValue
	// Tuning lists the seeds that chose the hyperparameters (nil when the
	// point had one setting). TunedOnReported is set when every seed took
	// part in the choice (a full grid), so the reported mean includes them.
	Tuning          []string
	TunedOnReported bool
	// Target is x as the grid set it when the axis shows something else:
	// the target epsilon of runs calibrated for a larger population
	// (Summary.PopulationX), whose X is then the runs' own epsilon.
	Target float64
	// Selected is the mean of the selection column (Summary.SelectCol) over
	// the tuning seeds, which chose the hyperparameters.
	Selected float64
	Hyper    string // the chosen hyperparameters ("server.lr=1, ...")
	// Edges names the chosen hyperparameters whose value is the lowest or
	// highest numeric value tried at this point ("client.lr=0.1 (lowest of
	// 4)"): the grid should be widened there.
	Edges []string
	Dirs  []string // run folders of the reported runs
	// The chosen runs' privacy, from index.csv (distinct values joined by
	// " / "; empty where the index does not have the column).
	Delta, Accountant, Sigma, Sensitivity, Participation string
}

// SeedValue is one reported seed's y at a point.
type SeedValue struct {
	Seed string
	Y    float64
}

// Summary is a grid's plotted data.
type Summary struct {
	XCol, YCol, ByCol string
	SelectCol         string // the column hyperparameters are chosen on
	// PopulationX is set when the grid's x is the target epsilon of runs
	// with privacy.population_scale: the epsilon of the simulated larger
	// population, not of the run's own clients. The points are then placed
	// at the runs' own epsilon (index column epsilon, the largest among a
	// point's reported runs) and keep the target in Point.Target: a figure's
	// epsilon axis is always the epsilon the runs have.
	PopulationX bool
	Hyper       []string // the columns optimized over
	Points      []Point  // finite x, sorted by series then x
	Baselines   []Point  // non-private runs (x = +Inf), one per series
	Skipped     int      // runs not finished (pending, interrupted, failed; a waiting seed once)
	// Withheld are the points left out because some of their runs have not
	// finished, in order of appearance in index.csv.
	Withheld []Unfinished
	// Accountants and Deltas are the distinct accountants and deltas of the
	// finished private runs, which every epsilon axis names; Unlabelled
	// counts finished private runs whose index row has no accountant (an
	// index written before the column existed).
	Accountants []string
	Deltas      []string
	Adjacencies []string // the neighbouring relations (index column adjacency)
	Unlabelled  int
	index       *results.Table
}

// resolve finds the index column for a name.
func resolve(t *results.Table, name string) (string, error) {
	for _, c := range aliases[name] {
		if t.Has(c) {
			return c, nil
		}
	}
	if t.Has(name) {
		return name, nil
	}
	for _, h := range t.Header {
		if strings.HasSuffix(h, "."+name) || strings.HasPrefix(h, name+".") {
			return h, nil
		}
	}
	return "", fmt.Errorf("figures: no column %q in index.csv (columns: %s)", name, strings.Join(t.Header, ", "))
}

func parse(s string) float64 {
	switch s {
	case "inf", "+Inf", "":
		return math.Inf(1)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// Summarize reads dir/index.csv and picks, for every (series, x), the
// hyperparameters (varied columns other than x, the series and seed, and
// other than those constant within each series) with the best mean y over
// seeds: the highest, or the lowest when y is a loss (a column ending in
// "loss"). Diverged runs count with their recorded value, a non-finite one
// as 0 accuracy or +Inf loss, so they lose; unfinished runs are skipped.
func Summarize(dir string, o Options) (*Summary, error) {
	o = o.withDefaults()
	t, err := results.ReadIndex(filepath.Join(dir, "index.csv"))
	if err != nil {
		return nil, err
	}
	s := &Summary{}
	if s.XCol, err = resolve(t, o.X); err != nil {
		return nil, err
	}
	if s.YCol, err = resolve(t, o.Y); err != nil {
		return nil, err
	}
	if s.ByCol, err = resolve(t, o.By); err != nil {
		return nil, err
	}
	s.SelectCol = s.YCol
	if o.Select != "" {
		if s.SelectCol, err = resolve(t, o.Select); err != nil {
			return nil, err
		}
	} else if s.YCol == "final_accuracy" && hasValues(t, "final_val_accuracy") {
		s.SelectCol = "final_val_accuracy"
	}
	s.Hyper = hyperColumns(t, s.XCol, s.ByCol)
	groups, keys, err := s.group(t)
	if err != nil {
		return nil, err
	}
	s.index = t
	s.labels(t)
	lower := LowerIsBetter(s.SelectCol)
	for _, k := range keys {
		best := s.best(t, k, groups[k], lower)
		if s.PopulationX && !math.IsInf(best.X, 1) {
			own, err := ownEpsilon(t, best.Dirs)
			if err != nil {
				return nil, err
			}
			best.Target, best.X = best.X, own
		}
		if math.IsInf(best.X, 1) {
			s.Baselines = append(s.Baselines, best)
		} else {
			s.Points = append(s.Points, best)
		}
	}
	order := func(a, b Point) int {
		return cmp.Or(cmp.Compare(a.Series, b.Series), cmp.Compare(a.X, b.X))
	}
	slices.SortFunc(s.Points, order)
	slices.SortFunc(s.Baselines, order)
	return s, nil
}

// hyperColumns lists the varied columns that are hyperparameters: not
// fixed, not the axes (nor their fixed twins) and not the seed, and not
// constant within every series (a zip partner of the series, like
// aggregator.kind for by: name).
func hyperColumns(t *results.Table, xCol, byCol string) []string {
	skip := map[string]bool{xCol: true, byCol: true, "seed": true, fixedTwin[xCol]: true, fixedTwin[byCol]: true}
	for k, v := range fixedTwin { // x = privacy.epsilon also hides the fixed epsilon
		if v == xCol || v == byCol {
			skip[k] = true
		}
	}
	var hyper []string
	for _, h := range t.Header {
		if results.IsIndexColumn(h) || skip[h] {
			continue
		}
		seen := map[string]string{}
		varies := false
		for i := range t.Rows {
			ser, v := t.Get(i, byCol), t.Get(i, h)
			if old, ok := seen[ser]; ok && old != v {
				varies = true
				break
			}
			seen[ser] = v
		}
		if varies {
			hyper = append(hyper, h)
		}
	}
	return hyper
}

// seriesX is a point of a figure: a series at an x.
type seriesX struct {
	series string
	x      float64
}

// group sorts the finished rows by point (series, x) and, within a point,
// by hyperparameter setting; keys are the points in order of appearance.
// A point some of whose runs have not finished is left out (Withheld): its
// choice of hyperparameters, or its held-out seeds, are not final yet, and
// under a tune: section its only finished runs may be the tuning seed's.
func (s *Summary) group(t *results.Table) (map[seriesX]map[string][]int, []seriesX, error) {
	groups := map[seriesX]map[string][]int{}
	var keys []seriesX
	waiting := map[seriesX]int{}
	unknown := map[string]int{}            // unfinished runs of a series at an x not known yet
	seeds := map[seriesX]map[string]bool{} // the seeds of a point's waiting rows
	for i := range t.Rows {
		st := t.Get(i, "status")
		if st == "not-chosen" {
			continue // a grid's tune: protocol never runs it (not unfinished)
		}
		if st != "complete" && st != "diverged" {
			v, ser := t.Get(i, s.XCol), t.Get(i, s.ByCol)
			var k seriesX
			switch x := parse(v); {
			case v == "" && results.IsIndexColumn(s.XCol):
				unknown[ser]++ // x is a result (noise_multiplier): not known before the run ends
				s.Skipped++
				continue
			case v == "":
				k = seriesX{ser, math.Inf(1)} // an unset target: the series' baseline
			case math.IsNaN(x):
				s.Skipped++
				continue
			default:
				k = seriesX{ser, x}
			}
			if st == "waiting" {
				// tune: one of these rows per setting will run for this seed,
				// once its group has chosen: one run to come, not one a row.
				if seeds[k] == nil {
					seeds[k] = map[string]bool{}
				}
				sd := t.Get(i, "seed")
				if seeds[k][sd] {
					continue
				}
				seeds[k][sd] = true
			}
			waiting[k]++
			s.Skipped++
			continue
		}
		v := t.Get(i, s.XCol)
		x := parse(v)
		if v == "" { // unset (ReadIndex reads an earlier index's "null" so)
			if t.Get(i, "epsilon") != "inf" {
				return nil, nil, fmt.Errorf("figures: row %d: %s is not set and the run is private", i+1, s.XCol)
			}
			x = math.Inf(1) // a non-private baseline, whose target (privacy.epsilon) is unset
		}
		if math.IsNaN(x) {
			return nil, nil, fmt.Errorf("figures: row %d: %s = %q is not a number", i+1, s.XCol, t.Get(i, s.XCol))
		}
		k := seriesX{t.Get(i, s.ByCol), x}
		var hp []string
		for _, h := range s.Hyper {
			hp = append(hp, h+"="+t.Get(i, h))
		}
		h := strings.Join(hp, ", ")
		if groups[k] == nil {
			groups[k] = map[string][]int{}
			keys = append(keys, k)
		}
		groups[k][h] = append(groups[k][h], i)
	}
	if len(keys) == 0 {
		return nil, nil, errors.New("figures: no finished runs in index.csv")
	}
	var done []seriesX
	for _, k := range keys {
		if waiting[k] == 0 && unknown[k.series] == 0 {
			done = append(done, k)
			continue
		}
		n := 0
		for _, rows := range groups[k] {
			n += len(rows)
		}
		s.Withheld = append(s.Withheld, Unfinished{Series: k.series, X: k.x, Finished: n, Waiting: waiting[k] + unknown[k.series]})
		delete(groups, k)
	}
	if len(done) == 0 {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoFinishedPoint, s.withheldList())
	}
	return groups, done, nil
}

// ErrNoFinishedPoint is Summarize's error when runs have finished but no
// point has all its runs finished (a grid stopped early, or one shard of
// it): there is nothing to plot yet.
var ErrNoFinishedPoint = errors.New("figures: no point has finished all its runs yet")

// Unfinished is a point left out of the figures and tables because some of
// its runs have not finished (pending, waiting, interrupted or failed in
// index.csv; a seed waiting for its group's tuning choice counts as the one
// run it will have).
// When x is a result column (noise_multiplier), an unfinished run's x is not
// known, so it holds back every point of its series.
type Unfinished struct {
	Series            string
	X                 float64
	Finished, Waiting int // its runs finished, and not (yet)
}

// withheldList names the withheld points ("dpftrlm at ε = 2 (3 of 15 runs
// finished), …").
func (s *Summary) withheldList() string {
	var out []string
	for _, u := range s.Withheld {
		at := fmt.Sprintf("%s at %s = %s", u.Series, shortLabel(s.XCol), fmtX(s.XCol, u.X))
		if math.IsInf(u.X, 1) {
			at = u.Series + " without noise"
		}
		out = append(out, fmt.Sprintf("%s (%d of %d runs finished)", at, u.Finished, u.Finished+u.Waiting))
	}
	if len(out) > 6 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return strings.Join(out, ", ")
}

// labels collects the accountants and deltas of the private finished rows,
// and whether the x axis has a population epsilon.
func (s *Summary) labels(t *results.Table) {
	for i := range t.Rows {
		st := t.Get(i, "status")
		if (st != "complete" && st != "diverged") || t.Get(i, "epsilon") == "inf" || t.Get(i, "epsilon") == "" {
			continue
		}
		if a := t.Get(i, "accountant"); a == "" {
			s.Unlabelled++
		} else if !slices.Contains(s.Accountants, a) {
			s.Accountants = append(s.Accountants, a)
		}
		if d := t.Get(i, "delta"); d != "" && !slices.Contains(s.Deltas, d) {
			s.Deltas = append(s.Deltas, d)
		}
		if a := t.Get(i, "adjacency"); a != "" && !slices.Contains(s.Adjacencies, a) {
			s.Adjacencies = append(s.Adjacencies, a)
		}
	}
	slices.Sort(s.Adjacencies)
	slices.Sort(s.Accountants)
	slices.Sort(s.Deltas)
	if s.XCol == "privacy.epsilon" && t.Has("population_epsilon") {
		for i := range t.Rows {
			if t.Get(i, "population_epsilon") != "" {
				s.PopulationX = true
			}
		}
	}
}

// best is the point k with its best hyperparameter setting (highest mean
// of the selection column over the seeds every setting ran, lowest when
// lower is better; ties go to the first setting in sorted order). The
// seeds every setting ran are all of them in a full grid; under a grid's
// tune: section they are the tuning seeds (experiments.TuneConfig).
//
// y is reported over the chosen setting's held-out seeds: those that did
// not take part in the choice. A point with one setting chose nothing and
// reports all its seeds; a point whose every seed tried every setting (a
// full grid) has no held-out seed, so it reports all of them and is marked
// TunedOnReported.
func (s *Summary) best(t *results.Table, k seriesX, settings map[string][]int, lower bool) Point {
	hypers := make([]string, 0, len(settings))
	for h := range settings {
		hypers = append(hypers, h)
	}
	slices.Sort(hypers)
	common := commonSeeds(t, settings)
	chosen, bestSel := "", 0.0
	for _, h := range hypers {
		sel, nsel := 0.0, 0
		for _, i := range settings[h] {
			if common[t.Get(i, "seed")] {
				sel += value(t, i, s.SelectCol)
				nsel++
			}
		}
		sel /= float64(max(1, nsel))
		if chosen == "" || (!lower && sel > bestSel) || (lower && sel < bestSel) {
			chosen, bestSel = h, sel
		}
	}
	rows := settings[chosen]
	p := Point{Series: k.series, X: k.x, Min: math.Inf(1), Max: math.Inf(-1), Hyper: chosen, Selected: bestSel}
	reported := heldOut(t, rows, common, len(settings) > 1)
	if len(reported) == 0 {
		reported, p.TunedOnReported = rows, true
	}
	if len(settings) > 1 {
		p.Tuning = seedList(t, rows, common, true)
	}
	ys := make([]float64, 0, len(reported))
	for _, i := range reported {
		y := value(t, i, s.YCol)
		ys = append(ys, y)
		p.Min, p.Max = min(p.Min, y), max(p.Max, y)
		p.Dirs = append(p.Dirs, t.Get(i, "dir"))
		p.PerSeed = append(p.PerSeed, SeedValue{Seed: t.Get(i, "seed"), Y: y})
	}
	p.Seeds = len(reported)
	p.Mean, p.CILow, p.CIHigh = meanCI(ys)
	p.Delta, p.Accountant = distinct(t, rows, "delta"), distinct(t, rows, "accountant")
	p.Sigma, p.Sensitivity = distinct(t, rows, "noise_multiplier"), distinct(t, rows, "sensitivity")
	p.Participation = distinct(t, rows, "participation.kind")
	p.Edges = s.edges(t, chosen, settings)
	return p
}

// heldOut returns the rows whose seed is not a tuning seed (all rows when
// nothing was tuned).
func heldOut(t *results.Table, rows []int, tuning map[string]bool, tuned bool) []int {
	if !tuned {
		return rows
	}
	var out []int
	for _, i := range rows {
		if !tuning[t.Get(i, "seed")] {
			out = append(out, i)
		}
	}
	return out
}

// seedList returns the sorted distinct seeds of rows that are (in = true)
// or are not in set.
func seedList(t *results.Table, rows []int, set map[string]bool, in bool) []string {
	var out []string
	for _, i := range rows {
		if sd := t.Get(i, "seed"); set[sd] == in && !slices.Contains(out, sd) {
			out = append(out, sd)
		}
	}
	slices.Sort(out)
	return out
}

// ownEpsilon is the largest index column epsilon among the runs in dirs.
func ownEpsilon(t *results.Table, dirs []string) (float64, error) {
	eps := math.Inf(-1)
	for i := range t.Rows {
		if slices.Contains(dirs, t.Get(i, "dir")) {
			e := parse(t.Get(i, "epsilon"))
			if math.IsNaN(e) {
				return 0, fmt.Errorf("figures: run %s has no epsilon in index.csv", t.Get(i, "dir"))
			}
			eps = max(eps, e)
		}
	}
	return eps, nil
}

// commonSeeds is the set of seeds that every setting of a point ran (all
// seeds when no setting shares one with every other).
func commonSeeds(t *results.Table, settings map[string][]int) map[string]bool {
	var common map[string]bool
	for _, rows := range settings {
		these := map[string]bool{}
		for _, i := range rows {
			if common == nil || common[t.Get(i, "seed")] {
				these[t.Get(i, "seed")] = true
			}
		}
		common = these
	}
	if len(common) == 0 {
		common = map[string]bool{}
		for _, rows := range settings {
			for _, i := range rows {
				common[t.Get(i, "seed")] = true
			}
		}
	}
	return common
}

// value is column col of row i, a non-finite or missing value counting as
// 0 (accuracies) or +Inf (losses), so that diverged runs lose.
func value(t *results.Table, i int, col string) float64 {
	y := parse(t.Get(i, col))
	if math.IsNaN(y) || math.IsInf(y, 0) {
		y = 0
		if LowerIsBetter(col) {
			y = math.Inf(1)
		}
	}
	return y
}

// meanCI returns the mean of ys and its 95% Student-t confidence interval
// (NaN bounds for fewer than two values; the mean itself when they are all
// equal).
func meanCI(ys []float64) (mean, lo, hi float64) {
	n := float64(len(ys))
	for _, y := range ys {
		mean += y / n
	}
	if len(ys) < 2 || math.IsInf(mean, 0) {
		return mean, math.NaN(), math.NaN()
	}
	var ss float64
	for _, y := range ys {
		ss += (y - mean) * (y - mean)
	}
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975) * math.Sqrt(ss/(n-1)/n)
	return mean, mean - half, mean + half
}

// edges names the hyperparameters of the chosen setting whose numeric
// value is the lowest or highest tried at the point (settings are "h=v, ..."
// strings in the order of s.Hyper).
func (s *Summary) edges(t *results.Table, chosen string, settings map[string][]int) []string {
	var out []string
	values := func(setting string) []string { return strings.Split(setting, ", ") }
	for setting := range settings {
		if len(values(setting)) != len(s.Hyper) {
			return nil // a value holding ", ": not split here
		}
	}
	if len(s.Hyper) == 0 {
		return nil
	}
	for j, h := range s.Hyper {
		var tried []float64
		for setting := range settings {
			v := parse(strings.TrimPrefix(values(setting)[j], h+"="))
			if !math.IsNaN(v) && !math.IsInf(v, 0) && !slices.Contains(tried, v) {
				tried = append(tried, v)
			}
		}
		v := parse(strings.TrimPrefix(values(chosen)[j], h+"="))
		if len(tried) < 2 || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		switch v {
		case slices.Min(tried):
			out = append(out, fmt.Sprintf("%s=%s (lowest of %d)", h, strconv.FormatFloat(v, 'g', -1, 64), len(tried)))
		case slices.Max(tried):
			out = append(out, fmt.Sprintf("%s=%s (highest of %d)", h, strconv.FormatFloat(v, 'g', -1, 64), len(tried)))
		}
	}
	return out
}

// hasValues reports whether the index has column col with a value in some
// row.
func hasValues(t *results.Table, col string) bool {
	if !t.Has(col) {
		return false
	}
	for i := range t.Rows {
		if t.Get(i, col) != "" {
			return true
		}
	}
	return false
}

// distinct joins the distinct non-empty values of col over rows with " / ".
func distinct(t *results.Table, rows []int, col string) string {
	var vs []string
	for _, i := range rows {
		if v := t.Get(i, col); v != "" && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	return strings.Join(vs, " / ")
}

// EpsilonNote names the accountant, delta and neighbouring relation of the
// grid's epsilons, for every axis and table that shows one: "pld, δ = 1e-05,
// zero-out", or the lists when they differ, or a warning when the index does
// not record the accountant (an index without an adjacency column, written
// before it existed, names none).
func (s *Summary) EpsilonNote() string {
	acct := strings.Join(s.Accountants, ", ")
	switch {
	case len(s.Accountants) == 0:
		acct = "accountant not recorded"
	case len(s.Accountants) > 1:
		acct = "accountants " + acct
	}
	if s.Unlabelled > 0 && len(s.Accountants) > 0 {
		acct += fmt.Sprintf(" (%d runs without a recorded accountant)", s.Unlabelled)
	}
	if len(s.Deltas) > 0 {
		acct += ", δ = " + strings.Join(s.Deltas, ", ")
	}
	if len(s.Adjacencies) > 0 {
		acct += ", " + strings.Join(s.Adjacencies, " / ")
	}
	return acct
}

func (o Options) withDefaults() Options {
	if o.X == "" {
		o.X = "epsilon"
	}
	if o.Y == "" {
		o.Y = "accuracy"
	}
	if o.By == "" {
		o.By = "aggregator"
	}
	return o
}

// WriteBest writes the plotted points as CSV: series, x (for a grid
// calibrated for a larger population, the runs' own epsilon, with the
// target in population_epsilon after seeds), y's mean, its 95%
// t confidence interval (empty for one seed), min and max, seeds, the mean
// of the selection column (when it is not y), the chosen hyperparameters and
// those chosen at an edge of the values tried.
func (s *Summary) WriteBest(path string) error {
	xcol := s.XCol
	if s.PopulationX {
		xcol = "epsilon" // the runs' own; the target is population_epsilon
	}
	header := []string{s.ByCol, xcol, s.YCol + "_mean", s.YCol + "_ci95_low", s.YCol + "_ci95_high", s.YCol + "_min", s.YCol + "_max", "seeds"}
	if s.PopulationX {
		header = append(header, "population_epsilon")
	}
	if s.SelectCol != s.YCol {
		header = append(header, s.SelectCol+"_mean")
	}
	header = append(header, "chosen", "at_edge")
	var rows [][]string
	for _, p := range append(append([]Point{}, s.Points...), s.Baselines...) {
		f := func(v float64) string {
			if math.IsNaN(v) {
				return ""
			}
			return strconv.FormatFloat(v, 'g', 6, 64)
		}
		x := f(p.X)
		if math.IsInf(p.X, 1) {
			x = "inf"
		}
		row := []string{p.Series, x, f(p.Mean), f(p.CILow), f(p.CIHigh), f(p.Min), f(p.Max), strconv.Itoa(p.Seeds)}
		if s.PopulationX {
			target := ""
			if p.Target != 0 {
				target = f(p.Target)
			}
			row = append(row, target) // empty for a non-private baseline
		}
		if s.SelectCol != s.YCol {
			row = append(row, f(p.Selected))
		}
		rows = append(rows, append(row, p.Hyper, strings.Join(p.Edges, "; ")))
	}
	return results.WriteCSV(path, header, rows)
}

// Series returns the series names in order.
func (s *Summary) Series() []string {
	var out []string
	for _, p := range append(append([]Point{}, s.Points...), s.Baselines...) {
		if !slices.Contains(out, p.Series) {
			out = append(out, p.Series)
		}
	}
	slices.Sort(out)
	return out
}
