package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"

	"dpfl/aggregators/strategy"
	"dpfl/aggregators/strategy/filecache"
	"dpfl/participation"
	"dpfl/privacy"
)

// N is the number of steps of the paper's table.
const N = 1024

// Delta is the δ of the accounting. The paper's caption of Fig 5 as we have
// it does not state δ; 1e-6 is the δ of its other experiments with
// user-level accounting, an assumption stated in the README.
const Delta = 1e-6

// Epsilons and Epochs are the rows and columns of the paper's table.
var (
	Epsilons = []float64{0.03125, 0.0625, 0.125, 0.25, 0.5, 1, 2, 4, 8, 16}
	Epochs   = []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
)

// header is cells.csv's first line.
var header = []string{"epsilon", "epochs", "bands", "q", "turns", "z", "sens", "frob_b2", "rmse", "epsilon_achieved"}

// cell is one (ε, E, b̂): the calibrated noise multiplier z and the RMSE of
// amplified BandMF with b̂ bands.
type cell struct {
	Epsilon  float64
	Epochs   int
	Bands    int
	Q        float64
	Turns    int
	Z        float64
	Sens     float64
	FrobB2   float64
	RMSE     float64
	Achieved float64
}

func (c cell) key() string { return fmt.Sprintf("%g/%d/%d", c.Epsilon, c.Epochs, c.Bands) }

func (c cell) record() []string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	return []string{g(c.Epsilon), strconv.Itoa(c.Epochs), strconv.Itoa(c.Bands), g(c.Q), strconv.Itoa(c.Turns),
		g(c.Z), g(c.Sens), g(c.FrobB2), g(c.RMSE), g(c.Achieved)}
}

// computer holds the strategy cache and the BandMF metrics computed so far.
type computer struct {
	account string    // the accountant's name: rdp or pld
	orders  []float64 // the RDP orders of the accounting (nil: privacy.DefaultOrders)
	cache   *strategy.Cache
	log     func(string)
	metrics map[int]strategy.Metrics
}

func newComputer(dir string, log func(string)) *computer {
	c := &strategy.Cache{Store: filecache.Dir(dir), Warn: func(err error) { log("cache: " + err.Error()) }}
	return &computer{account: "rdp", cache: c, log: log, metrics: map[int]strategy.Metrics{}}
}

// bandMetrics are the single-participation metrics of the optimized
// b̂-banded factorization of the prefix workload of size N.
func (c *computer) bandMetrics(ctx context.Context, bands int) (strategy.Metrics, error) {
	if m, ok := c.metrics[bands]; ok {
		return m, nil
	}
	w := strategy.Prefix(N)
	f, err := c.cache.BandMF(ctx, w, bands, strategy.LBFGSOptions{})
	if err != nil {
		return strategy.Metrics{}, err
	}
	m, err := strategy.EvaluateContext(ctx, f, w, participation.AtMostOnce)
	if err != nil {
		return strategy.Metrics{}, err
	}
	c.metrics[bands] = m
	return m, nil
}

// calibrate is the smallest noise multiplier z (relative tolerance 1e-6)
// for which turns compositions of the Poisson-subsampled (rate q) Gaussian
// mechanism are (ε, Delta)-DP under zero-out adjacency by the accountant
// named (rdp: RDP over orders with the CKS conversion; pld: privacy loss
// distributions), and the ε it achieves.
func calibrate(ctx context.Context, account string, eps, q float64, turns int, orders []float64) (float64, float64, error) {
	rdp, err := privacy.NewByName(account, orders)
	if err != nil {
		return 0, 0, err
	}
	ev := func(z float64) privacy.Event {
		return privacy.Neighbouring{Relation: privacy.ZeroOut, Event: privacy.SelfComposed{
			Event: privacy.PoissonSampled{Probability: q, Event: privacy.Gaussian{NoiseMultiplier: z}}, Count: turns}}
	}
	z, g, err := privacy.CalibrateContext(ctx, eps, Delta, ev, rdp, 1e-6)
	return z, g.Epsilon, err
}

// sampling is amplified BandMF's accounting over n steps and E epochs with
// b̂ bands (Choquette-Choo et al. 2023 §5, App F): b̂ equal groups, group
// t mod b̂ at step t, each of its examples sampled with probability
// q = E·b̂/n (E participations in expectation), n/b̂ turns of a group
// composed. bands must divide n and E·b̂ ≤ n.
func sampling(n, epochs, bands int) (q float64, turns int) {
	return float64(epochs) * float64(bands) / float64(n), n / bands
}

// compute is the cell (ε, E, b̂).
func (c *computer) compute(ctx context.Context, eps float64, epochs, bands int) (cell, error) {
	m, err := c.bandMetrics(ctx, bands)
	if err != nil {
		return cell{}, err
	}
	q, turns := sampling(N, epochs, bands)
	z, achieved, err := calibrate(ctx, c.account, eps, q, turns, c.orders)
	if err != nil {
		return cell{}, fmt.Errorf("ε = %g, E = %d, b̂ = %d: %w", eps, epochs, bands, err)
	}
	rmse := z * m.SingleSensitivity * math.Sqrt(m.FrobB2/N)
	return cell{eps, epochs, bands, q, turns, z, m.SingleSensitivity, m.FrobB2, rmse, achieved}, nil
}

// fill computes every cell missing from path, band counts in increasing
// order (so the columns of many epochs, which need only few bands, finish
// first), appending each to path as it finishes.
func (c *computer) fill(ctx context.Context, path string, lim limits) error {
	done := map[string]bool{}
	cells, err := readCells(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, x := range cells {
		done[x.key()] = true
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	if len(cells) == 0 {
		if err := w.Write(header); err != nil {
			return err
		}
	}
	for bands := 1; bands <= min(N, lim.bands); bands *= 2 {
		for _, e := range Epochs {
			for _, eps := range Epsilons {
				x := cell{Epsilon: eps, Epochs: e, Bands: bands}
				if bands*e > N || e > lim.epochs || done[x.key()] {
					continue
				}
				if x, err = c.compute(ctx, eps, e, bands); err != nil {
					return err
				}
				if err := w.Write(x.record()); err != nil {
					return err
				}
				w.Flush()
				if err := w.Error(); err != nil {
					return err
				}
			}
		}
		if m, ok := c.metrics[bands]; ok {
			c.log(fmt.Sprintf("b̂ = %d done (‖B‖²_F = %.6g)", bands, m.FrobB2))
		}
	}
	return nil
}

// FineOrders are privacy.DefaultOrders' fractional orders 1.1 to 10.9 and
// every integer order from 11 to 1024, then 1536, 2048, 3072 and 4096:
// DefaultOrders has no order between 64 and 128 nor above 512, which at
// small ε (best order in that gap or above it) overstates ε.
func FineOrders() []float64 {
	var o []float64
	for x := 11; x <= 109; x++ {
		o = append(o, float64(x)/10)
	}
	for a := 11; a <= 1024; a++ {
		o = append(o, float64(a))
	}
	return append(o, 1536, 2048, 3072, 4096)
}

// limits restricts a run to band counts and epoch counts up to these.
type limits struct{ bands, epochs int }

// readCells reads cells.csv.
func readCells(path string) ([]cell, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var cells []cell
	for i, r := range recs {
		if i == 0 {
			continue
		}
		if len(r) != len(header) {
			return nil, fmt.Errorf("%s line %d: %d fields, want %d", path, i+1, len(r), len(header))
		}
		var v [10]float64
		for j, s := range r {
			if v[j], err = strconv.ParseFloat(s, 64); err != nil {
				return nil, fmt.Errorf("%s line %d, %s: %v", path, i+1, header[j], err)
			}
		}
		cells = append(cells, cell{v[0], int(v[1]), int(v[2]), v[3], int(v[4]), v[5], v[6], v[7], v[8], v[9]})
	}
	return cells, nil
}
