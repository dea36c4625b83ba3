// Package results writes what a run produces: the normalized config, the
// per-round metrics table and the run summary, each written atomically (a
// temporary file in the same folder, synced, then renamed), so an interrupted
// run never leaves a half-written file behind.
//
// Layout of one run folder:
//
//	config.yaml   the normalized configuration (every default filled in;
//	              a value only the plan decides is a comment on its key,
//	              "bands: 0 # used: 10", package experiments)
//	metrics.csv   one row per evaluated round: run_id, seed, round,
//	              train_loss, test_loss, test_accuracy, epsilon with its
//	              accountant, delta, adjacency and epsilon_scope, cohort,
//	              clip_fraction, noise_norm, and clip_norm with adaptive
//	              clipping (MetricsHeader)
//	summary.json  final and best accuracy, epsilon, delta, sigma, wall time
//	model.safetensors  the final global model of a completed run
//	              (safetensors: float32 tensors named by layer)
//	ledger.csv    DP-AGD only: every release (round, what, zCDP rho, total)
//	participation.json  the realized schedule: participations histogram,
//	              smallest separation, and per round the cohort fill,
//	              eligible clients, waits and simulated UTC hour
//	audit.json    with audit.canaries: the empirical epsilon estimate with
//	              its interval, the reported epsilon, and each canary's
//	              statistic (package experiments)
//
// A grid's folder holds index.csv, one row per point (IndexFixedColumns),
// and rounds.csv, every finished run's metrics rows with the run's index
// values (WriteRounds).
//
// A run folder is owned by one process at a time through an OS lock on its
// .lock file (Lock).
//
// Package results imports the standard library, dpfl/privacy (the privacy
// report of a summary) and, on Windows, golang.org/x/sys/windows for the
// lock.
package results

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"dpfl/privacy"
)

// WriteFileAtomic writes data to path through a temporary file and a rename.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	tmp := f.Name()
	// CreateTemp makes the file private (0600); results are for sharing.
	err = f.Chmod(0o644)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// MetricsHeader is the column list of metrics.csv, one row per evaluated
// round. Every row names its run (run_id, seed) and what its epsilon is:
// epsilon is the run's privacy spent as accountant (exact-gdp, rdp-cks,
// pld, ...) states it at delta, under the neighbouring relation adjacency
// (add/remove, replace-one, zero-out; empty when the events fix none), and
// epsilon_scope says of what: through_round, the rounds released through
// the row's round, or whole_run, the whole run's bound on every row
// (correlated-noise mechanisms, accounted as one Gaussian over all rounds:
// an upper bound for every prefix). A run without noise has epsilon +Inf
// and the four columns empty. So the metrics of many runs concatenate into
// one table (pandas.concat) without renaming a column.
//
// Files written before these columns existed start with round and name
// the epsilon column after its accountant and delta,
// "epsilon[rdp-cks;delta=1e-05]" or "epsilon[exact-gdp;delta=1e-05;whole_run]"
// (or plain "epsilon"); readers accept them (ReadMetrics, ReadMetricsTable).
var MetricsHeader = []string{"run_id", "seed", "round", "train_loss", "test_loss", "test_accuracy",
	"epsilon", "accountant", "delta", "adjacency", "epsilon_scope", "cohort", "clip_fraction", "noise_norm"}

// The values of metrics.csv's epsilon_scope column (see MetricsHeader).
const (
	ScopeThroughRound = "through_round"
	ScopeWholeRun     = "whole_run"
)

// EpsilonInfo says what metrics.csv's epsilon column is (MetricsHeader).
type EpsilonInfo struct {
	Accountant string  // the guarantee's method; "" without an accountant (no noise)
	Delta      float64 // the delta epsilon is stated at
	Adjacency  string  // privacy.Adjacency's label ("" when the events fix none)
	WholeRun   bool    // every row is the whole run's bound
}

// cells are the accountant, delta, adjacency and epsilon_scope cells.
func (e EpsilonInfo) cells() []string {
	if e.Accountant == "" {
		return []string{"", "", "", ""}
	}
	scope := ScopeThroughRound
	if e.WholeRun {
		scope = ScopeWholeRun
	}
	return []string{e.Accountant, formatFloat(e.Delta), e.Adjacency, scope}
}

// EpsilonLabel is the human form of the same label, for progress bars and
// tables: "rdp-cks, δ = 1e-05", or "whole run, exact-gdp, δ = 1e-05".
func EpsilonLabel(method string, delta float64, wholeRun bool) string {
	if method == "" {
		return "no accountant"
	}
	l := fmt.Sprintf("%s, δ = %g", method, delta)
	if wholeRun {
		l = "whole run, " + l
	}
	return l
}

// MetricsRow is one evaluated round.
type MetricsRow struct {
	Round        int
	TrainLoss    float64
	TestLoss     float64
	TestAccuracy float64
	Epsilon      float64 // privacy spent through this round (+Inf when not private)
	Cohort       int
	ClipFraction float64
	NoiseNorm    float64
	ClipNorm     float64 // adaptive clipping: the round's clip norm (the clip_norm column, written only when SetClipNormColumn)
}

// ClipNormColumn is the header of the column metrics.csv has after
// MetricsHeader's when the run clips adaptively: the round's clip norm.
const ClipNormColumn = "clip_norm"

// Metrics accumulates rows and rewrites metrics.csv atomically on Flush.
type Metrics struct {
	path  string
	runID string
	seed  string
	eps   EpsilonInfo
	clip  bool // write the clip_norm column
	rows  []MetricsRow
}

// SetClipNormColumn adds the clip_norm column (adaptive clipping).
func (m *Metrics) SetClipNormColumn() { m.clip = true }

// SetRun sets the run_id and seed columns.
func (m *Metrics) SetRun(id string, seed uint64) {
	m.runID, m.seed = id, strconv.FormatUint(seed, 10)
}

// SetEpsilon sets what the epsilon column is (accountant, delta, adjacency
// and scope columns).
func (m *Metrics) SetEpsilon(e EpsilonInfo) { m.eps = e }

// NewMetrics returns a metrics table that writes to path.
func NewMetrics(path string) *Metrics { return &Metrics{path: path} }

// Keep replaces the rows with rows (for a resumed run: the rows of the
// rounds its checkpoint covers).
func (m *Metrics) Keep(rows []MetricsRow) { m.rows = append(m.rows[:0], rows...) }

// Add appends a row.
func (m *Metrics) Add(r MetricsRow) { m.rows = append(m.rows, r) }

// Rows returns the rows so far.
func (m *Metrics) Rows() []MetricsRow { return m.rows }

// Flush writes every row so far.
func (m *Metrics) Flush() error {
	rows := make([][]string, len(m.rows))
	eps := m.eps.cells()
	for i, r := range m.rows {
		row := make([]string, 0, len(MetricsHeader)+1)
		row = append(row, m.runID, m.seed, strconv.Itoa(r.Round), formatFloat(r.TrainLoss), formatFloat(r.TestLoss),
			formatFloat(r.TestAccuracy), formatFloat(r.Epsilon))
		row = append(row, eps...)
		row = append(row, strconv.Itoa(r.Cohort), formatFloat(r.ClipFraction), formatFloat(r.NoiseNorm))
		if m.clip {
			row = append(row, formatFloat(r.ClipNorm))
		}
		rows[i] = row
	}
	header := MetricsHeader
	if m.clip {
		header = append(append([]string{}, MetricsHeader...), ClipNormColumn)
	}
	return WriteCSV(m.path, header, rows)
}

// formatFloat prints the shortest representation that round-trips.
func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// Summary is the content of summary.json: the run's outcome and its
// privacy report (epsilon, delta, noise, sensitivity, realized
// participation; population scaling, where Epsilon is always that of this
// run's own clients).
type Summary struct {
	RunID         string
	Name          string
	Status        string // "complete" or "diverged"
	Rounds        int
	FinalAccuracy float64
	BestAccuracy  float64
	FinalTestLoss float64
	// FinalValAccuracy is the accuracy on the validation share of the test
	// set (eval.validation; nil without one): FinalAccuracy is then
	// measured on the rest.
	FinalValAccuracy *float64
	// MajorityAccuracy is, for next-token text, the test accuracy of always
	// predicting the most frequent in-vocabulary training target, scored
	// like the model (targets other than padding, OOV and end of document).
	MajorityAccuracy *float64
	privacy.Report
	// Nu is the ν of a nu-ftrl run: aggregator.nu, or the one tuned for
	// the rounds when it is not set. config.yaml keeps aggregator.nu as
	// written (its keys make the run ID: writing the tuned value there
	// would change the IDs of existing runs) and gives the tuned one only
	// as a comment.
	Nu *float64
	// MonteCarloGuarantee is the guarantee in words, with its method,
	// confidence and neighbouring relation, when epsilon is a Monte Carlo
	// estimate (privacy.amplification: balls-in-bins); "" otherwise.
	MonteCarloGuarantee string
	// StrategyNotConverged says how the optimizer of the run's
	// correlated-noise strategy stopped short of its optimum (its method,
	// iterations, why it stopped and its certified gap); "" when it
	// converged or the strategy is not optimized. The privacy account does
	// not depend on it (the sensitivity is that of the strategy used), but
	// the noise may be larger than the optimum's.
	StrategyNotConverged string
	WallSeconds          float64
	ResumedFrom          int // the checkpoint round a resumed run continued from
	Workers              int
	// TrainedParams is the number of trained parameters when model.freeze
	// lists tensors (the dimension of the clipped update and of the
	// noise); 0 when every parameter is trained.
	TrainedParams int
	// ClipCountStddev is adaptive clipping's noise std on the count of
	// unclipped clients (0 without adaptive clipping); the count is part of
	// the privacy event epsilon accounts.
	ClipCountStddev float64
	// DP-AGD (aggregator.kind dp-agd): the zCDP budget ρ its ledger held
	// (epsilon is its conversion) and what the run spent of it (ledger.csv
	// lists every release). Rounds is the rounds it could pay for.
	ZCDPBudget, ZCDPSpent float64
	// Inputs are the fingerprints of the input files the run read (trace,
	// corpus, data files), keyed by the configuration key naming them.
	Inputs map[string]string
	// Audit is the empirical epsilon of a run with canaries, for both
	// threat models (audit.json has the details); nil without an audit.
	Audit *AuditSummary
}

// AuditSummary is a run's empirical epsilon estimates (see audit.json).
type AuditSummary struct {
	ThreatModel string        `json:"threat_model"` // the headline one (audit.observe)
	FinalModel  AuditInterval `json:"final_model"`
	EveryRound  AuditInterval `json:"every_round"`
}

// AuditInterval is an empirical epsilon with its confidence interval, and
// the one-run lower bound from the same canaries.
type AuditInterval struct {
	Epsilon Float `json:"epsilon"`
	Low     Float `json:"epsilon_low"`
	High    Float `json:"epsilon_high"`
	// OneRun is the one-run lower bound on epsilon at 95% confidence
	// (Steinke, Nasr and Jagielski 2023; audit.json's one_run).
	OneRun Float `json:"epsilon_one_run_lower_bound"`
}

// summaryForm is summary.json's form. Epsilon is null when the run is not
// private (infinite); the noise multiplier is sigma relative to
// sensitivity 1, noise_std the per-coordinate std of the noise on the sum.
var summaryForm = privacy.NewForm(Summary{},
	"run_id=RunID", "name=Name", "status=Status", "rounds=Rounds",
	"final_accuracy=FinalAccuracy", "best_accuracy=BestAccuracy", "final_test_loss=FinalTestLoss",
	"final_val_accuracy=FinalValAccuracy,omitempty", "majority_accuracy=MajorityAccuracy,omitempty",
	"epsilon=Epsilon", "delta=Delta", "epsilon_method=EpsilonMethod", "noise_multiplier=NoiseMultiplier",
	"sensitivity=Sensitivity", "sensitivity_for=SensitivityFor,omitempty", "noise_std=NoiseStd", "nu=Nu,omitempty",
	"participation=Participation", "max_participations=MaxParticipations", "mean_cohort_fill=MeanFill",
	"min_separation=MinSeparation", "wall_seconds=WallSeconds", "resumed_from_round=ResumedFrom,omitempty",
	"population_scale=PopulationScale,omitempty", "population_epsilon=PopulationEpsilon,omitempty",
	"population_noise_multiplier=PopulationNoiseMultiplier,omitempty",
	"workers=Workers", "trained_params=TrainedParams,omitempty", "clip_count_stddev=ClipCountStddev,omitempty",
	"zcdp_budget=ZCDPBudget,omitempty", "zcdp_spent=ZCDPSpent,omitempty", "inputs=Inputs,omitempty", "audit=Audit,omitempty",
	"monte_carlo_guarantee=MonteCarloGuarantee,omitempty", "monte_carlo_samples=Samples,omitempty",
	"monte_carlo_confidence=Confidence,omitempty", "unamplified=Unamplified,omitempty",
	"strategy_not_converged=StrategyNotConverged,omitempty")

// MarshalJSON writes s in summary.json's form.
func (s Summary) MarshalJSON() ([]byte, error) { return summaryForm.Marshal(&s) }

// UnmarshalJSON reads summary.json's form.
func (s *Summary) UnmarshalJSON(b []byte) error { return summaryForm.Unmarshal(b, s) }

// maxSummaryBytes bounds the summary.json a reader accepts (a run's is a
// few kilobytes).
const maxSummaryBytes = 16 << 20

// ReadSummary reads a summary.json (a regular file: a device or FIFO is
// refused without blocking, see OpenRegular).
func ReadSummary(path string) (*Summary, error) {
	b, err := ReadFileMax(path, maxSummaryBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("results: %w", err)
		}
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("results: %s: %w", path, err)
	}
	return &s, nil
}

// maxMetricsLine bounds a line of metrics.csv (a row is about 150 bytes).
const maxMetricsLine = 64 << 10

// readMetricsRecords reads the records of a metrics.csv (a regular file,
// see OpenRegular). Its lines are read one at a time, each at most
// maxMetricsLine bytes, so a file that is not a metrics table (zeros, one
// endless line) is refused without being held in memory.
func readMetricsRecords(path string) ([][]string, error) {
	f, _, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxMetricsLine)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue // as encoding/csv skips empty lines
		}
		// Metrics writes no comma, quote or line break inside a field: a
		// line is a record.
		rec, err := csv.NewReader(bytes.NewReader(sc.Bytes())).Read()
		if err != nil {
			return nil, fmt.Errorf("results: %s line %d: %w", path, line, err)
		}
		if len(recs) > 0 && len(rec) != len(recs[0]) {
			return nil, fmt.Errorf("results: %s line %d: %d fields, the header has %d", path, line, len(rec), len(recs[0]))
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results: %s line %d: %w", path, len(recs)+1, err)
	}
	if len(recs) == 0 || metricsEpsilonColumn(recs[0]) < 0 || !slices.Contains(recs[0], "round") {
		return nil, fmt.Errorf("results: %s: not a metrics table", path)
	}
	return recs, nil
}

// metricsEpsilonColumn is the index of a metrics header's epsilon column
// ("epsilon", or in files written before MetricsHeader's epsilon columns
// "epsilon[...]"), or -1.
func metricsEpsilonColumn(header []string) int {
	for i, h := range header {
		if h == "epsilon" || strings.HasPrefix(h, "epsilon[") {
			return i
		}
	}
	return -1
}

// ReadMetrics reads the rows of a metrics.csv written by Metrics, in the
// current form or an earlier one (see MetricsHeader).
func ReadMetrics(path string) ([]MetricsRow, error) {
	recs, err := readMetricsRecords(path)
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	col["epsilon"] = metricsEpsilonColumn(recs[0])
	for _, h := range []string{"train_loss", "test_loss", "test_accuracy", "cohort", "clip_fraction", "noise_norm"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("results: %s: not a metrics table (no %s column)", path, h)
		}
	}
	clip, hasClip := col[ClipNormColumn]
	rows := make([]MetricsRow, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		var r MetricsRow
		var errs [9]error
		num := func(name string) float64 {
			v, err := strconv.ParseFloat(rec[col[name]], 64)
			if err != nil {
				errs[len(errs)-1] = err
			}
			return v
		}
		r.Round, errs[0] = strconv.Atoi(rec[col["round"]])
		r.Cohort, errs[1] = strconv.Atoi(rec[col["cohort"]])
		r.TrainLoss, r.TestLoss, r.TestAccuracy = num("train_loss"), num("test_loss"), num("test_accuracy")
		r.Epsilon, r.ClipFraction, r.NoiseNorm = num("epsilon"), num("clip_fraction"), num("noise_norm")
		if hasClip {
			r.ClipNorm, errs[2] = strconv.ParseFloat(rec[clip], 64)
		}
		for _, e := range errs {
			if e != nil {
				return nil, fmt.Errorf("results: %s line %d: %w", path, i+2, e)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// ReadMetricsTable reads a metrics.csv as text, in the current form
// (MetricsHeader, then clip_norm if the file has it) whatever the form it
// was written in: a file written before the run_id, seed, accountant,
// delta, adjacency and epsilon_scope columns gets them from its epsilon
// column's name ("epsilon[rdp-cks;delta=1e-05]": through_round,
// "...;whole_run]": whole_run), run_id and seed empty and adjacency empty
// (the old name does not record it). Cells are copied, never reformatted.
func ReadMetricsTable(path string) (*Table, error) {
	recs, err := readMetricsRecords(path)
	if err != nil {
		return nil, err
	}
	old := recs[0]
	if slices.Contains(old, "epsilon_scope") {
		return newTable(recs), nil
	}
	// An earlier form: the epsilon column's name says what it is.
	e := metricsEpsilonColumn(old)
	var info []string
	if name := old[e]; name != "epsilon" {
		parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(name, "epsilon["), "]"), ";")
		d, _ := strings.CutPrefix(parts[min(1, len(parts)-1)], "delta=")
		scope := ScopeThroughRound
		if parts[len(parts)-1] == ScopeWholeRun {
			scope = ScopeWholeRun
		}
		info = []string{parts[0], d, "", scope}
	} else {
		info = []string{"", "", "", ""}
	}
	header := append([]string{}, MetricsHeader...)
	if slices.Contains(old, ClipNormColumn) {
		header = append(header, ClipNormColumn)
	}
	oldCol := map[string]int{}
	for i, h := range old {
		oldCol[h] = i
	}
	oldCol["epsilon"] = e
	out := [][]string{header}
	for _, rec := range recs[1:] {
		row := make([]string, len(header))
		for j, h := range header {
			switch h {
			case "accountant", "delta", "adjacency", "epsilon_scope":
				row[j] = info[slices.Index(MetricsHeader, h)-slices.Index(MetricsHeader, "accountant")]
			default:
				if i, ok := oldCol[h]; ok {
					row[j] = rec[i]
				}
			}
		}
		out = append(out, row)
	}
	return newTable(out), nil
}

// WriteCSV writes a header and rows as CSV, atomically.
func WriteCSV(path string, header []string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(header)
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return WriteFileAtomic(path, buf.Bytes())
}

// Table is a CSV file read by column name.
type Table struct {
	Header []string
	Rows   [][]string
	col    map[string]int
}

// ReadTable reads a CSV file with a header line (a regular file, see
// OpenRegular).
func ReadTable(path string) (*Table, error) {
	f, _, err := OpenRegular(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("results: %w", err)
		}
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("results: %s: empty table", path)
	}
	return newTable(recs), nil
}

// newTable makes a table of a header record and rows.
func newTable(recs [][]string) *Table {
	t := &Table{Header: recs[0], Rows: recs[1:], col: map[string]int{}}
	for i, h := range t.Header {
		t.col[h] = i
	}
	return t
}

// Has reports whether the table has the column.
func (t *Table) Has(col string) bool { _, ok := t.col[col]; return ok }

// Get returns row i's value in col ("" if the column is absent).
func (t *Table) Get(i int, col string) string {
	j, ok := t.col[col]
	if !ok || j >= len(t.Rows[i]) {
		return ""
	}
	return t.Rows[i][j]
}

// IndexFixedColumns are the fixed columns of a grid's index.csv, one row per
// point; IndexOptionalColumns follow those of them some row has a value in,
// then the grid's varied dotted paths (privacy.epsilon, server.lr, ...)
// other than these. status is complete, diverged, interrupted, failed,
// pending or not-chosen; aggregator.kind and participation.kind are the
// point's (a grid varying them has them once); epsilon is the accounted
// epsilon of the run's clients ("inf" without noise) at delta, by
// accountant (the guarantee's method: exact-gdp, rdp-cks, pld, ...; empty
// without noise) under adjacency (add/remove, replace-one, zero-out; from
// the run's metrics.csv, empty when it does not record it). An empty cell is
// a value not known (a point not finished) or not set (a varied key left
// unset at that point).
var IndexFixedColumns = []string{"run_id", "dir", "status", "aggregator.kind", "participation.kind", "seed",
	"epsilon", "delta", "accountant", "adjacency", "noise_multiplier", "sensitivity", "final_accuracy",
	"best_accuracy", "final_test_loss", "rounds", "wall_seconds"}

// IndexOptionalColumns are index.csv's columns that only some runs have,
// written when at least one row has a value: population_epsilon, the
// epsilon of the simulated larger population under
// privacy.population_scale; final_val_accuracy, the accuracy on
// eval.validation's held-out share; majority_accuracy, next-token text's
// majority baseline; audit_final_* and audit_rounds_*, a run with canaries'
// empirical epsilon and its 95% interval for the final-model and
// every-round threat models.
var IndexOptionalColumns = []string{"population_epsilon", "final_val_accuracy", "majority_accuracy",
	"audit_final_epsilon", "audit_final_low", "audit_final_high",
	"audit_rounds_epsilon", "audit_rounds_low", "audit_rounds_high"}

// indexRenamed are the columns index files written before
// IndexFixedColumns took the dotted names called aggregator.kind and
// participation.kind.
var indexRenamed = map[string]string{"aggregator": "aggregator.kind", "participation": "participation.kind"}

// IsIndexColumn reports whether col is one of index.csv's own columns
// (fixed or optional, under its current name or an earlier one), not a
// varied path.
func IsIndexColumn(col string) bool {
	_, old := indexRenamed[col]
	return old || slices.Contains(IndexFixedColumns, col) || slices.Contains(IndexOptionalColumns, col)
}

// ReadIndex reads a grid's index.csv, in the current form whatever the form
// it was written in: the columns an earlier form called aggregator and
// participation are aggregator.kind and participation.kind (dropped where
// the grid varied those paths, whose column restated them), and an unset
// varied value, written "null" then, is an empty cell.
func ReadIndex(path string) (*Table, error) {
	t, err := ReadTable(path)
	if err != nil {
		return nil, err
	}
	var keep []int
	header := make([]string, 0, len(t.Header))
	for i, h := range t.Header {
		if n, ok := indexRenamed[h]; ok {
			if t.Has(n) {
				continue
			}
			h = n
		}
		keep = append(keep, i)
		header = append(header, h)
	}
	recs := [][]string{header}
	for _, r := range t.Rows {
		rec := make([]string, len(keep))
		for j, i := range keep {
			if i < len(r) {
				rec[j] = r[i]
			}
			if (rec[j] == "null" || rec[j] == "~") && !IsIndexColumn(header[j]) {
				rec[j] = ""
			}
		}
		recs = append(recs, rec)
	}
	return newTable(recs), nil
}

// Float is a float64 whose JSON form writes +Inf and -Inf as the strings
// "inf" and "-inf" (JSON has no infinities), and NaN as null.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	switch {
	case math.IsInf(x, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(x, -1):
		return []byte(`"-inf"`), nil
	case math.IsNaN(x):
		return []byte("null"), nil
	}
	return json.Marshal(x)
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"inf"`:
		*f = Float(math.Inf(1))
		return nil
	case `"-inf"`:
		*f = Float(math.Inf(-1))
		return nil
	case "null":
		*f = Float(math.NaN())
		return nil
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	*f = Float(x)
	return nil
}

// RoundsFile is the table WriteRounds puts in a grid's folder.
const RoundsFile = "rounds.csv"

// WriteRounds writes dir/rounds.csv from dir/index.csv and the run folders'
// metrics.csv: one row per evaluated round of every finished run (complete
// or diverged), with the run's run_id, status, seed, aggregator.kind,
// participation.kind and the grid's varied paths (the values index.csv
// has), then metrics.csv's columns from round on (MetricsHeader, and
// clip_norm when a run has it). One call of pandas.read_csv loads a grid's
// learning curves with everything needed to group them. Cells are copied
// from the files, never reformatted; metrics.csv files of an earlier form
// are read as ReadMetricsTable reads them. It returns the path written.
func WriteRounds(dir string) (string, error) {
	idx, err := ReadIndex(filepath.Join(dir, "index.csv"))
	if err != nil {
		return "", err
	}
	keys := []string{"run_id", "status", "seed", "aggregator.kind", "participation.kind"}
	for _, h := range idx.Header {
		if !IsIndexColumn(h) {
			keys = append(keys, h)
		}
	}
	metricCols := slices.Clone(MetricsHeader[slices.Index(MetricsHeader, "round"):])
	cells := append(slices.Clone(metricCols), ClipNormColumn)
	var rows [][]string
	clip := false
	for i := range idx.Rows {
		if st := idx.Get(i, "status"); st != "complete" && st != "diverged" {
			continue
		}
		m, err := ReadMetricsTable(filepath.Join(dir, idx.Get(i, "dir"), "metrics.csv"))
		if err != nil {
			return "", err
		}
		clip = clip || m.Has(ClipNormColumn)
		for j := range m.Rows {
			row := make([]string, 0, len(keys)+len(metricCols)+1)
			for _, k := range keys {
				row = append(row, idx.Get(i, k))
			}
			for _, c := range cells {
				row = append(row, m.Get(j, c))
			}
			rows = append(rows, row)
		}
	}
	header := append(keys, metricCols...)
	if clip {
		header = append(header, ClipNormColumn)
	} else {
		for i := range rows {
			rows[i] = rows[i][:len(header)]
		}
	}
	path := filepath.Join(dir, RoundsFile)
	return path, WriteCSV(path, header, rows)
}
