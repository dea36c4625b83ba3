// Package results writes what a run produces: the normalized config, the
// per-round metrics table and the run summary, each written atomically (a
// temporary file in the same folder, synced, then renamed), so an interrupted
// run never leaves a half-written file behind.
//
// Layout of one run folder:
//
//	config.yaml   the normalized configuration (every default filled in)
//	metrics.csv   round, train_loss, test_loss, test_accuracy,
//	              epsilon[accountant;delta=D] (or ...;whole_run]), ...
//	summary.json  final and best accuracy, epsilon, delta, sigma, wall time
//	participation.json  the realized schedule: participations histogram,
//	              smallest separation, and per round the cohort fill,
//	              eligible clients, waits and simulated UTC hour
//
// A run folder is owned by one process at a time through an OS lock on its
// .lock file (Lock).
//
// Package results imports only the standard library (and, on Windows,
// golang.org/x/sys/windows for the lock).
package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
}

// Metrics accumulates rows and rewrites metrics.csv atomically on Flush.
type Metrics struct {
	path   string
	epsCol string // header of the epsilon column ("" = "epsilon")
	rows   []MetricsRow
}

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
	}
	header := MetricsHeader
	if m.epsCol != "" {
		header = append([]string{}, MetricsHeader...)
		header[4] = m.epsCol
	}
	return WriteCSV(m.path, header, rows)
}

// formatFloat prints the shortest representation that round-trips.
func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// Summary is the content of summary.json.
type Summary struct {
	RunID           string   `json:"run_id"`
	Name            string   `json:"name"`
	Status          string   `json:"status"` // "complete" or "diverged"
	Rounds          int      `json:"rounds"`
	FinalAccuracy   float64  `json:"final_accuracy"`
	BestAccuracy    float64  `json:"best_accuracy"`
	FinalTestLoss   float64  `json:"final_test_loss"`
	Epsilon         *float64 `json:"epsilon"` // null when not private (infinite)
	Delta           float64  `json:"delta"`
	EpsilonMethod   string   `json:"epsilon_method"`
	NoiseMultiplier float64  `json:"noise_multiplier"`          // sigma, relative to sensitivity 1
	Sensitivity     float64  `json:"sensitivity"`               // L2 sensitivity of the mechanism (clip = 1)
	SensitivityFor  string   `json:"sensitivity_for,omitempty"` // what it is of (a sampled round, a strategy under a participation, k participations)
	NoiseStd        float64  `json:"noise_std"`                 // per-coordinate std of the noise on the sum
	// Nu is the ν of a nu-ftrl run: aggregator.nu, or the one tuned for
	// the rounds when it is not set. It is here and not in config.yaml,
	// whose keys make the run ID: writing the tuned value there would
	// change the IDs of existing runs.
	Nu            *float64 `json:"nu,omitempty"`
	Participation string   `json:"participation"`
	MaxPerClient  int      `json:"max_participations"` // most rounds any one client took part in
	MeanFill      float64  `json:"mean_cohort_fill"`   // mean of cohort / target over rounds
	MinSeparation int      `json:"min_separation"`     // smallest gap between two participations of a client (0: none repeated)
	WallSeconds   float64  `json:"wall_seconds"`
	ResumedFrom   int      `json:"resumed_from_round,omitempty"` // the checkpoint round a resumed run continued from
	// Population scaling (privacy.population_scale): the simulated larger
	// population's scale, epsilon and noise multiplier. Epsilon above is
	// always that of this run's own clients.
	PopulationScale           float64  `json:"population_scale,omitempty"`
	PopulationEpsilon         *float64 `json:"population_epsilon,omitempty"`
	PopulationNoiseMultiplier float64  `json:"population_noise_multiplier,omitempty"`
	Workers                   int      `json:"workers"`
	// Inputs are the fingerprints of the input files the run read (trace,
	// corpus, data files), keyed by the configuration key naming them.
	Inputs map[string]string `json:"inputs,omitempty"`
}

// ReadSummary reads a summary.json.
func ReadSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("results: %s: %w", path, err)
	}
	return &s, nil
}

// ReadMetrics reads the rows of a metrics.csv written by Metrics.
func ReadMetrics(path string) ([]MetricsRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("results: %s: %w", path, err)
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

// ReadTable reads a CSV file with a header line.
func ReadTable(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
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
// larger population under privacy.population_scale (empty otherwise).
var IndexFixedColumns = []string{"run_id", "dir", "status", "aggregator", "participation", "seed",
	"epsilon", "delta", "accountant", "noise_multiplier", "sensitivity", "final_accuracy", "best_accuracy",
	"final_test_loss", "rounds", "wall_seconds", "population_epsilon"}
