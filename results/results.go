// Package results writes what a run produces: the normalized config, the
// per-round metrics table and the run summary, each written atomically (a
// temporary file in the same folder, synced, then renamed), so an interrupted
// run never leaves a half-written file behind.
//
// Layout of one run folder:
//
//	config.yaml   the normalized configuration (every default filled in)
//	metrics.csv   round, train_loss, test_loss, test_accuracy,
//	              epsilon[accountant;delta=D] (or ...;whole_run]), cohort,
//	              clip_fraction, noise_norm, and clip_norm with adaptive
//	              clipping
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

// MetricsHeader is the column list of metrics.csv. The epsilon column's
// header carries its accountant and delta (EpsilonColumn), e.g.
// "epsilon[rdp-cks;delta=1e-05]"; files written before that say "epsilon",
// and readers accept both.
var MetricsHeader = []string{"round", "train_loss", "test_loss", "test_accuracy", "epsilon", "cohort", "clip_fraction", "noise_norm"}

// EpsilonColumn is the header of metrics.csv's epsilon column for epsilons
// accounted by method at delta: "epsilon[method;delta=D]" when each row is
// the epsilon of the rounds released so far, or
// "epsilon[method;delta=D;whole_run]" when every row is the whole run's
// bound (correlated-noise mechanisms, whose epsilon is accounted for the
// whole run at once). Without an accountant (no noise) it is "epsilon".
func EpsilonColumn(method string, delta float64, wholeRun bool) string {
	if method == "" {
		return "epsilon"
	}
	c := "epsilon[" + method + ";delta=" + strconv.FormatFloat(delta, 'g', -1, 64)
	if wholeRun {
		c += ";whole_run"
	}
	return c + "]"
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
	path   string
	epsCol string // header of the epsilon column ("" = "epsilon")
	clip   bool   // write the clip_norm column
	rows   []MetricsRow
}

// SetClipNormColumn adds the clip_norm column (adaptive clipping).
func (m *Metrics) SetClipNormColumn() { m.clip = true }

// SetEpsilonColumn sets the header of the epsilon column (EpsilonColumn).
func (m *Metrics) SetEpsilonColumn(name string) { m.epsCol = name }

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
	for i, r := range m.rows {
		rows[i] = []string{
			strconv.Itoa(r.Round), formatFloat(r.TrainLoss), formatFloat(r.TestLoss), formatFloat(r.TestAccuracy),
			formatFloat(r.Epsilon), strconv.Itoa(r.Cohort), formatFloat(r.ClipFraction), formatFloat(r.NoiseNorm),
		}
		if m.clip {
			rows[i] = append(rows[i], formatFloat(r.ClipNorm))
		}
	}
	header := MetricsHeader
	if m.epsCol != "" || m.clip {
		header = append([]string{}, MetricsHeader...)
		if m.epsCol != "" {
			header[4] = m.epsCol
		}
		if m.clip {
			header = append(header, ClipNormColumn)
		}
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
	// the rounds when it is not set. It is here and not in config.yaml,
	// whose keys make the run ID: writing the tuned value there would
	// change the IDs of existing runs.
	Nu          *float64
	WallSeconds float64
	ResumedFrom int // the checkpoint round a resumed run continued from
	Workers     int
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

// AuditInterval is an empirical epsilon with its confidence interval.
type AuditInterval struct {
	Epsilon Float `json:"epsilon"`
	Low     Float `json:"epsilon_low"`
	High    Float `json:"epsilon_high"`
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
	"zcdp_budget=ZCDPBudget,omitempty", "zcdp_spent=ZCDPSpent,omitempty", "inputs=Inputs,omitempty", "audit=Audit,omitempty")

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

// ReadMetrics reads the rows of a metrics.csv written by Metrics (a regular
// file, see OpenRegular). Its lines are read one at a time, each at most
// maxMetricsLine bytes, so a file that is not a metrics table (zeros, one
// endless line) is refused without being held in memory.
func ReadMetrics(path string) ([]MetricsRow, error) {
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
		// Metrics writes numbers and a header without commas in a field,
		// quotes or line breaks: a line is a record.
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
	if len(recs) == 0 || len(recs[0]) < len(MetricsHeader) || recs[0][0] != MetricsHeader[0] || !strings.HasPrefix(recs[0][4], "epsilon") {
		return nil, fmt.Errorf("results: %s: not a metrics table", path)
	}
	rows := make([]MetricsRow, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		var r MetricsRow
		var errs [8]error
		r.Round, errs[0] = strconv.Atoi(rec[0])
		r.TrainLoss, errs[1] = strconv.ParseFloat(rec[1], 64)
		r.TestLoss, errs[2] = strconv.ParseFloat(rec[2], 64)
		r.TestAccuracy, errs[3] = strconv.ParseFloat(rec[3], 64)
		r.Epsilon, errs[4] = strconv.ParseFloat(rec[4], 64)
		r.Cohort, errs[5] = strconv.Atoi(rec[5])
		r.ClipFraction, errs[6] = strconv.ParseFloat(rec[6], 64)
		r.NoiseNorm, errs[7] = strconv.ParseFloat(rec[7], 64)
		if len(recs[0]) > len(MetricsHeader) && recs[0][len(MetricsHeader)] == ClipNormColumn && len(rec) > len(MetricsHeader) {
			var e error
			if r.ClipNorm, e = strconv.ParseFloat(rec[len(MetricsHeader)], 64); e != nil {
				return nil, fmt.Errorf("results: %s line %d: %w", path, i+2, e)
			}
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
	t := &Table{Header: recs[0], Rows: recs[1:], col: map[string]int{}}
	for i, h := range t.Header {
		t.col[h] = i
	}
	return t, nil
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
// point; the grid's varied dotted paths (privacy.epsilon, server.lr, ...)
// follow them. status is complete, diverged, interrupted, failed or pending;
// epsilon is the accounted epsilon of the run's clients ("inf" without
// noise) at delta, by accountant (the guarantee's method: exact-gdp,
// rdp-cks, pld, ...; empty without noise, and absent from index files
// written before it existed); population_epsilon, that of the simulated
// larger population under privacy.population_scale (empty otherwise);
// audit_final_* and audit_rounds_*, a run with canaries' empirical epsilon
// and its 95% interval for the final-model and every-round threat models
// (empty without audit.canaries).
var IndexFixedColumns = []string{"run_id", "dir", "status", "aggregator", "participation", "seed",
	"epsilon", "delta", "accountant", "noise_multiplier", "sensitivity", "final_accuracy", "best_accuracy",
	"final_test_loss", "rounds", "wall_seconds", "population_epsilon", "final_val_accuracy", "majority_accuracy",
	"audit_final_epsilon", "audit_final_low", "audit_final_high",
	"audit_rounds_epsilon", "audit_rounds_low", "audit_rounds_high"}

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
