package experiments

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"dpfl/aggregators/strategy"
	"dpfl/datasets"

	"dpfl/aggregators"
)

// DefaultMemoryGB is the default limit, in GB (10⁹ bytes), on the estimated
// memory of a run: a configuration whose estimate is above it is refused at
// validation, naming the key that makes it large. dpfl run, grid and account
// take -max-memory GB to change it.
const DefaultMemoryGB = 16

// Limits bound the resources a configuration may ask for. The zero value is
// DefaultMemoryGB with one training worker.
type Limits struct {
	// MemoryGB is the largest estimated memory accepted, in GB (0:
	// DefaultMemoryGB).
	MemoryGB float64
	// Workers is the number of client-training goroutines the estimate
	// counts (each builds its own model copies; 0: 1).
	Workers int
	// Data is where a grid's points find their data files when their
	// configuration names no folder (the fingerprints of their inputs are
	// part of their run IDs); nil: a new datasets.Loader.
	Data *datasets.Loader

	// populations caches the populations counted for messages (a grid's
	// points usually share their data); nil: none.
	populations map[string]int
}

func (l Limits) memoryBytes() float64 {
	if l.MemoryGB > 0 {
		return l.MemoryGB * 1e9
	}
	return DefaultMemoryGB * 1e9
}

func (l Limits) workers() int { return max(1, l.Workers) }

// Memory is an estimate of the memory a run needs: Shared once, PerWorker
// for each client-training worker, by part.
type Memory struct {
	Shared, PerWorker float64
	Parts             []MemoryPart
}

// MemoryPart is one term of a Memory estimate.
type MemoryPart struct {
	Key       string // the configuration key that sizes it
	What      string // what it is, with the sizes
	Bytes     float64
	PerWorker bool
}

// Total is the estimate with the given number of workers.
func (m Memory) Total(workers int) float64 {
	return m.Shared + float64(max(1, workers))*m.PerWorker
}

// Estimated bytes of the run's parts, from the peak resident memory of
// dpfl run (Go's collector slack included) measured on runs that vary one
// size at a time, rounded up: mlp [10000] (7.95M parameters) took 38 bytes
// per parameter with one worker and 14 more per extra worker; batches of
// 10,000 mlp examples 2.5 floats per activation; the CNNs 255 (cnn) and
// 1,550 (cnn-large) floats per example and input pixel.
const (
	bytesPerRound       = 200 // schedule bookkeeping, participation.json, accounting
	bytesPerCohortSlot  = 8   // one client ID in the schedule
	bytesPerClient      = 150 // shard list, planner and statistics counters, availability
	bytesPerParamShared = 48  // global model, update, server momentum, checkpoint, noise, the exact sum (128-bit integers and their float64 vector)
	bytesPerParamWorker = 16  // a worker's training and evaluation models and gradient
	mnistBytes          = 3e8 // the MNIST images and labels, loaded once
)

// MemoryEstimate estimates the memory a run of the (normalized)
// configuration needs. It is arithmetic on the configuration's sizes only
// (in float64: nothing overflows), never reads data: the text datasets'
// corpora and populations are not counted.
func (c *Config) MemoryEstimate() Memory {
	var m Memory
	add := func(key string, perWorker bool, bytes float64, format string, args ...any) {
		if !(bytes > 0) {
			return
		}
		m.Parts = append(m.Parts, MemoryPart{Key: key, What: fmt.Sprintf(format, args...), Bytes: bytes, PerWorker: perWorker})
		if perWorker {
			m.PerWorker += bytes
		} else {
			m.Shared += bytes
		}
	}
	pos := func(v int) float64 { return float64(max(v, 0)) }
	d := c.Data
	dim, classes, dataBytes := d.Shape(c.Model.Text())
	add("data.dataset", false, dataBytes, "the %s data", d.Dataset)

	// The population and the schedule.
	clients := pos(d.Clients)
	add("data.clients", false, clients*bytesPerClient, "%d clients", d.Clients)
	pc := c.Participation
	rounds := pos(c.Rounds)
	cohort := pos(pc.Cohort)
	if pt := pc.schema().Pattern(); pt.SampledTurns() {
		cohort = math.Max(0, pt.Sampling) * clients / math.Max(1, pos(pc.B))
	} else if pt.Sampled() {
		cohort = math.Max(0, pc.Q) * clients
	}
	if clients > 0 {
		cohort = math.Min(cohort, clients)
	}
	add("rounds", false, rounds*(bytesPerRound+bytesPerCohortSlot*cohort), "the schedule of %d rounds of up to %.0f clients", c.Rounds, cohort)

	// The model and its activations.
	est := c.Model.Estimate(dim, classes)
	params, key := est.Params, "model."+est.Key
	if est.Key == "classes" {
		key = "data.vocab"
	}
	add(key, false, params*bytesPerParamShared, "%.4g model parameters", params)
	add(key, true, params*bytesPerParamWorker, "a worker's model copies (%.4g parameters)", params)
	perExample := est.ActivationBytes
	add("client.batch_size", true, pos(c.Client.BatchSize)*perExample, "a training batch of %d examples", c.Client.BatchSize)
	add("eval.batch", true, pos(c.Eval.Batch)*perExample, "an evaluation batch of %d examples", c.Eval.Batch)

	// Correlated noise: the strategy's dense matrices, and the noise history.
	ag := c.Aggregator
	if k := aggregators.Lookup(ag.Kind); k != nil && k.Correlated && c.Rounds > 0 {
		bands := ag.Bands
		if bands == 0 {
			bands = max(strategy.DefaultBands(pc.B, c.Rounds), 1)
		}
		add("rounds", false, strategy.MemoryBytes(ag.StrategyName(), c.Rounds, bands),
			"the %s strategy's %d×%d matrices", ag.Kind, c.Rounds, c.Rounds)
		latents := 2.0
		if ag.Memory != "regenerate" {
			latents = ag.NoiseVectors(c.Rounds, bands)
		}
		hist := latents * params * 8
		if ag.Memory != "regenerate" && ag.MemoryBudgetMB > 0 {
			hist = math.Min(hist, ag.MemoryBudgetMB*(1<<20)) // store mode is refused above the budget
		}
		add("aggregator.memory", false, hist, "the noise history (%.4g vectors of %.4g parameters)", latents, params)
	}
	if n := pos(c.Audit.Canaries); n > 0 {
		add("audit.canaries", false, n*(params*4+rounds*8+bytesPerClient+64), "%d canary directions of %.4g parameters and their projections in %d rounds", c.Audit.Canaries, params, c.Rounds)
	}
	return m
}

// validateMemory adds a problem when the estimate is above the limit.
func (c *Config) validateMemory(add addFunc, lim Limits) {
	m := c.MemoryEstimate()
	w := lim.workers()
	total, limit := m.Total(w), lim.memoryBytes()
	if total <= limit {
		return
	}
	// Name the key of the largest part; list the large parts by key.
	type group struct {
		key   string
		whats []string
		bytes float64
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, p := range m.Parts {
		b, what := p.Bytes, p.What
		if p.PerWorker && w > 1 {
			b *= float64(w)
			what += fmt.Sprintf(" × %d workers", w)
		}
		g := byKey[p.Key]
		if g == nil {
			g = &group{key: p.Key}
			byKey[p.Key] = g
			groups = append(groups, g)
		}
		g.bytes += b
		if b >= total/100 {
			g.whats = append(g.whats, what)
		}
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		switch {
		case a.bytes > b.bytes:
			return -1
		case a.bytes < b.bytes:
			return 1
		}
		return 0
	})
	var list []string
	for _, g := range groups {
		if g.bytes >= total/100 && len(g.whats) > 0 {
			list = append(list, fmt.Sprintf("%s %s for %s", g.key, formatGB(g.bytes), strings.Join(g.whats, " and ")))
		}
	}
	add(groups[0].key, "the run needs an estimated %s of memory, above the limit of %s (%s; -max-memory GB raises the limit if the machine has the memory)",
		formatGB(total), formatGB(limit), strings.Join(list, "; "))
}

// formatGB writes a byte count in GB (10⁹ bytes).
func formatGB(b float64) string {
	gb := b / 1e9
	switch {
	case gb >= 1e6:
		return fmt.Sprintf("%.3g GB", gb)
	case gb >= 10:
		return fmt.Sprintf("%.0f GB", gb)
	case gb >= 0.1:
		return fmt.Sprintf("%.1f GB", gb)
	}
	return fmt.Sprintf("%.2g GB", gb)
}
