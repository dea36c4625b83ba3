package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"dpfl/aggregators"
	"dpfl/aggregators/strategy"
	"dpfl/aggregators/strategy/filecache"
	"dpfl/experiments"
	"dpfl/participation"
	"dpfl/results/regular"
)

const mechanismUsageHead = `Usage:
  dpfl mechanism -n N [-strategy NAME] [-bands B] [-nu V] [-nu-bands B] [-buffers M] [-participation single|kb|minsep]
                 [-k K] [-b B] [-workload prefix|momentum|identity] [-momentum BETA]
                 [-lr-schedule constant|linear|cosine -warmup N -cooldown N -final-lr F]
                 [-workload-file FILE] [-gap G] [-reltol R] [-maxiter N] [-progress] [-cache DIR]
                 [-max-memory GB] [-memory M1,M2,...] [-restart-every R] [-json] [-quiet] [-all]
                 [-epsilon E -delta D -clients N -cohort M]

Prints a mechanism's sensitivity, loss (sens^2 ||B||_F^2, sigma = 1), rmse (sqrt(loss/n)),
worst per-round error (std of the noisiest round), noise cost per round in units of the
model dimension d, and the optimizer status. The workload A is what the error is measured on
and the optimized strategies are optimized for: prefix sums (default), A = I (identity),
SGD with heavy-ball momentum (momentum), either with a server learning-rate schedule
(-lr-schedule, as the run keys server.lr_schedule, warmup_rounds, cooldown_rounds and
final_lr_fraction: A = S diag(eta) M_beta, the aggregator workload "server"), or any
lower-triangular invertible A read from -workload-file (one row per line, entries separated
by spaces or commas, # comments; -n may be left out). Without -strategy, compares the mechanisms
a run can use for the given n and participation, best first, leaving out from n = {slow} the slow
exact optimizations (bandmf, multi-epoch, and nu-ftrl's search for ν without -nu; -strategy
runs one) and listing what it left out; -all compares every strategy, the offline-only ones too; with -memory, compares BLT (m buffers)
against BandMF (m+1 bands) at equal noise memory (m vectors of the model's size kept
between rounds) for each m. -restart-every R restarts the tree mechanisms every R rounds (a
run's aggregator.restart_every; restart: epoch is R = b). Mechanisms have the names a run's
aggregator.kind takes (tree-online is kind tree with estimator online; multi-epoch is
optimal-mf with multi_epoch: true); the -f variants, evaluated here only, drop the
equal-column-norm constraint (Choquette-Choo et al. 2023, App. B): the diagonal of X is free with fixed sums over
the (k,b) patterns. Old spellings are accepted: identity, optimal, nu, and tree
(tree-vanilla). Optimized strategies are cached in -cache (a cache that cannot be
written is a warning). A comparison prints its progress on stderr (strategy i of m,
iterations, loss or duality gap, elapsed time, and the estimated time left: the strategy's
from its mean time per iteration and the gap's trend or the -maxiter limit, the whole
comparison's from the mean time of the strategies done; -quiet: none); its table's last column says
how a run uses each row (aggregator.kind and keys, or offline only), and long parameters are
abbreviated below the table (-json has them all). Every strategy holds dense n×n matrices: an n whose estimate is
above -max-memory is refused, and a comparison skips the strategies that do not fit.

With -epsilon (under -participation kb), a second table calibrates dpfedavg and bandmf (b bands)
for (ε, δ) on N clients with M per round, amplified and unamplified side by side: (k,b) with
fixed groups (one Gaussian mechanism, exact), kb-poisson (q = M·b/N within its group's turns, rdp),
balls-in-bins (whole random bins, Monte Carlo at 99% confidence), and for dpfedavg uniform cohorts
(unamplified over the most participations of a planned schedule) and the same cohorts sampled
without replacement (rdp, replace-one). Each row gives the noise std per round (clip = 1), the
rmse at it, and the accounting method and neighbouring relation of its ε.

Mechanisms:
`

// mechanismUsage is the help text, with the mechanisms of aggregators.Names.
func mechanismUsage() string {
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(mechanismUsageHead, "{slow}", strconv.Itoa(mechanismSlowFromN)))
	for _, n := range aggregators.Names {
		name := n.Name
		if a := append(append([]string{}, n.Aliases...), n.MechanismAliases...); len(a) > 0 {
			name += " (" + strings.Join(a, ", ") + ")"
		}
		fmt.Fprintf(&b, "  %-24s %s\n", name, n.Note)
	}
	b.WriteString("\nFlags:\n")
	return b.String()
}

// mechanismRequest is a parsed dpfl mechanism command line.
type mechanismRequest struct {
	name     aggregators.Name // zero: compare all
	workload string
	cfg      strategy.Config
	json     bool
	quiet    bool            // -quiet: no progress lines
	all      bool            // -all: compare every strategy (comparisonSet)
	memories []int           // -memory: BLT vs BandMF at these noise memories
	priv     *privacyRequest // -epsilon: the amplified and unamplified comparison
}

// mechanismNames lists the -strategy values.
func mechanismNames() string {
	var names []string
	for _, n := range aggregators.Names {
		names = append(names, n.Name)
	}
	return strings.Join(names, ", ")
}

// parseMechanism parses the command line; ok is false when the command is
// done (help, or a usage error already reported, with its exit code).
// mechanismFlags are dpfl mechanism's flags.
type mechanismFlags struct {
	n        *int
	name     *string
	bands    *int
	nu       *float64
	nuBands  *int
	memory   *string
	buffers  *int
	part     *string
	k        *int
	b        *int
	wl       *string
	momentum *float64
	wlFile   *string
	lrShape  *string
	warmup   *int
	cooldown *int
	finalLR  *float64
	gap      *float64
	relTol   *float64
	maxIter  *int
	progress *bool
	cacheDir *string
	asJSON   *bool
	quiet    *bool
	all      *bool
	maxMem   *float64
	restart  *int
	priv     mechanismPrivacyFlags
}

// defineMechanismFlags defines the flags on fs.
func defineMechanismFlags(fs *flag.FlagSet) *mechanismFlags {
	defCache := strategyCache()
	priv := definePrivacyFlags(fs)
	return &mechanismFlags{
		priv:     priv,
		n:        fs.Int("n", 0, "number of rounds (required)"),
		name:     fs.String("strategy", "", mechanismNames()+" (default: compare all)"),
		bands:    fs.Int("bands", 0, "bands of bandmf and toeplitz (default -b under kb/minsep; required under single)"),
		nu:       fs.Float64("nu", -1, "nu of nu-ftrl in [0,1) (default: tuned by the prefix-sum loss)"),
		nuBands:  fs.Int("nu-bands", 0, "truncate nu-ftrl's C to this many Toeplitz coefficients (banded; default: all)"),
		memory:   fs.String("memory", "", "compare BLT with BandMF at equal noise memory: a comma-separated `list` of vectors kept between rounds (m buffers vs m+1 bands)"),
		buffers:  fs.Int("buffers", 0, "buffers of blt, at most 64 (default: BandMF's noise memory, bands - 1, at most 8; required under single participation without -bands)"),
		part:     fs.String("participation", "single", "single, kb ((k,b)-participation) or minsep (b-min-sep, at most k)"),
		k:        fs.Int("k", 1, "maximum participations (kb, minsep)"),
		b:        fs.Int("b", 0, "separation between participations (kb, minsep)"),
		wl:       fs.String("workload", "prefix", "prefix, momentum or identity"),
		momentum: fs.Float64("momentum", 0.9, "momentum beta of the momentum workload, in [0,1)"),
		wlFile:   fs.String("workload-file", "", "read the workload matrix A from this text `file` (instead of -workload)"),
		lrShape:  fs.String("lr-schedule", "constant", "learning-rate schedule of the prefix or momentum workload: constant, linear or cosine"),
		warmup:   fs.Int("warmup", 0, "rounds of learning-rate warmup (-lr-schedule linear or cosine)"),
		cooldown: fs.Int("cooldown", 0, "rounds of learning-rate cooldown (-lr-schedule linear or cosine)"),
		finalLR:  fs.Float64("final-lr", 0.05, "learning-rate factor of the last round after a cooldown, in [0,1]"),
		gap:      fs.Float64("gap", 1e-6, "target relative duality gap of the optimal fixed point"),
		relTol:   fs.Float64("reltol", 1e-9, "L-BFGS (bandmf, multi-epoch): stop when the loss improved by less than this (relative) over 20 iterations"),
		maxIter:  fs.Int("maxiter", 2000, "L-BFGS (bandmf, multi-epoch): maximum iterations"),
		progress: fs.Bool("progress", false, "print L-BFGS progress to stderr every 25 iterations"),
		cacheDir: fs.String("cache", defCache, "directory of the optimized-strategy cache (empty: no cache)"),
		asJSON:   fs.Bool("json", false, "print JSON (one object with -strategy, else an array best first)"),
		quiet:    fs.Bool("quiet", false, "no progress lines on stderr while a comparison runs"),
		all:      fs.Bool("all", false, fmt.Sprintf("compare every strategy: also those only evaluated offline (the -f variants, toeplitz) and, from n = %d, the slow exact optimizations (bandmf, multi-epoch, nu-ftrl without -nu)", mechanismSlowFromN)),
		maxMem:   fs.Float64("max-memory", experiments.DefaultMemoryGB, "refuse strategies whose estimated memory is above `GB` (10^9 bytes)"),
		restart:  fs.Int("restart-every", 0, "restart the tree mechanisms (tree-vanilla, tree-online, tree-full) every `R` rounds, as a run's aggregator.restart_every (restart: epoch is R = b); default: one tree"),
	}
}

func parseMechanism(args []string, stderr io.Writer) (req mechanismRequest, code int, ok bool) {
	fs := flag.NewFlagSet("mechanism", flag.ContinueOnError)
	f := defineMechanismFlags(fs)
	pos, code, ok := parseInterleaved(fs, args, mechanismUsage(), stderr)
	if !ok {
		return req, code, false
	}
	usageErr := func(format string, a ...any) (mechanismRequest, int, bool) {
		fmt.Fprintf(stderr, "dpfl mechanism: "+format+"\n", a...)
		return req, exitUsage, false
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !(*f.maxMem > 0) || math.IsInf(*f.maxMem, 0) {
		return usageErr("-max-memory %v must be a positive number of GB", *f.maxMem)
	}
	var fileWorkload *strategy.Workload
	if *f.wlFile != "" {
		for _, other := range []string{"workload", "momentum", "lr-schedule", "warmup", "cooldown", "final-lr"} {
			if set[other] {
				return usageErr("-%s does not apply to -workload-file (the file is the whole workload)", other)
			}
		}
		var err error
		if fileWorkload, err = readWorkloadFile(*f.wlFile, *f.maxMem); err != nil {
			return usageErr("%v", err)
		}
		if !set["n"] {
			*f.n = fileWorkload.N()
		} else if *f.n != fileWorkload.N() {
			return usageErr("-n %d, but the workload in %s is %d×%d", *f.n, *f.wlFile, fileWorkload.N(), fileWorkload.N())
		}
		*f.wl = "file:" + *f.wlFile
	}
	if *f.n < 1 {
		return usageErr("-n must be a positive number of rounds")
	}
	if *f.name != "" {
		m, found := aggregators.MechanismName(*f.name)
		if !found {
			return usageErr("unknown -strategy %q (want one of %s)", *f.name, mechanismNames())
		}
		req.name = m
	}
	// Refuse an n whose matrices cannot fit before allocating any: the
	// named strategy's estimate, or the smallest one's for a comparison.
	check := req.name.Strategy
	if check == "" {
		check = "identity"
	}
	if need := strategy.MemoryBytes(check, *f.n, max(*f.bands, strategy.DefaultBands(*f.b, *f.n), 1)); need > *f.maxMem*1e9 {
		return usageErr("-n %d: %s needs an estimated %.3g GB of memory (dense %d×%d matrices), above the limit of %g GB (-max-memory)",
			*f.n, check, need/1e9, *f.n, *f.n, *f.maxMem)
	}
	if *f.memory != "" {
		if req.name.Strategy != "" || set["buffers"] || set["bands"] {
			return usageErr("-memory compares blt with bandmf itself: no -strategy, -buffers or -bands")
		}
		var msg string
		if req.memories, msg = parseMemories(*f.memory, *f.n); msg != "" {
			return usageErr("%s", msg)
		}
	}
	sched := aggregators.LRSchedule{Rounds: *f.n, Warmup: *f.warmup, Cooldown: *f.cooldown, Final: *f.finalLR}
	p, w, msg := mechanismSetting(*f.part, *f.k, *f.b, *f.wl, *f.n, *f.momentum, *f.lrShape, sched, set)
	if fileWorkload != nil && msg == "" {
		w = fileWorkload
	}
	agg := mechanismKeys(f, set)
	if msg == "" {
		msg = checkMechanismKeys(agg, aggregators.Run{Rounds: *f.n, Participation: p}, set)
	}
	if msg == "" {
		msg = checkMechanismFlags(req.name, p.Pattern(), set, *f.name, *f.gap, *f.relTol, *f.maxIter)
	}
	if msg == "" {
		req.priv, msg = f.priv.check(set, p, *f.n, *f.asJSON)
	}
	if msg == "" {
		msg = scopedFlags(req, f, set)
	}
	if msg != "" {
		return usageErr("%s", msg)
	}
	lbfgs := lbfgsOptions(*f.relTol, *f.maxIter, *f.progress, stderr)
	req.cfg = strategy.Config{Workload: w, Participation: p.Pattern(), Bands: agg.Bands, Nu: -1, NuBands: agg.NuCoefficients, Buffers: agg.Buffers, Gap: *f.gap, LBFGS: lbfgs, MemoryLimit: *f.maxMem * 1e9, RestartEvery: agg.RestartEvery}
	if agg.Nu != nil {
		req.cfg.Nu = *agg.Nu
	}
	if *f.cacheDir != "" {
		req.cfg.Cache = &strategy.Cache{Store: filecache.Dir(*f.cacheDir), Warn: func(err error) {
			fmt.Fprintf(stderr, "dpfl mechanism: warning: %s\n", oneLine(err))
		}}
	}
	req.workload, req.json, req.quiet, req.all = workloadLabel(*f.wl, *f.momentum, *f.lrShape, sched), *f.asJSON, *f.quiet, *f.all
	return req, exitOK, true
}

// scopedFlags says why a flag does not apply to what req asks for ("" when
// all do): -restart-every to a strategy other than a tree, -all to anything
// but a comparison.
func scopedFlags(req mechanismRequest, f *mechanismFlags, set map[string]bool) string {
	if set["restart-every"] && req.name.Strategy != "" && !strings.HasPrefix(req.name.Strategy, "tree") {
		return fmt.Sprintf("-restart-every applies only to the tree mechanisms, not -strategy %s", *f.name)
	}
	if *f.all && (req.name.Strategy != "" || len(req.memories) > 0) {
		return "-all applies only to a comparison (no -strategy or -memory)"
	}
	return ""
}

// readWorkloadFile reads -workload-file. A FIFO or device would block the
// open or never end: only regular files are read (package regular), and
// rows are refused beyond the n whose smallest strategy fits in maxMemGB.
// Its errors are the usage message.
func readWorkloadFile(path string, maxMemGB float64) (*strategy.Workload, error) {
	f, _, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-workload-file: %v", err)
	}
	defer f.Close()
	maxN := 1
	for step := 1 << 30; step > 0; step >>= 1 {
		if strategy.MemoryBytes("identity", maxN+step, 1) <= maxMemGB*1e9 {
			maxN += step
		}
	}
	w, err := strategy.ReadWorkloadLimit(f, path, maxN)
	if err != nil {
		return nil, fmt.Errorf("-workload-file: %s", strings.TrimPrefix(err.Error(), "strategy: "))
	}
	return w, nil
}

// parseMemories parses -memory, a list of noise-vector counts below n; a
// non-empty message is the usage error.
func parseMemories(memory string, n int) ([]int, string) {
	var out []int
	for _, f := range strings.Split(memory, ",") {
		m, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || m < 1 || m >= n { // m >= n, not m+1 > n: m+1 overflows at the largest int
			return nil, fmt.Sprintf("-memory %q: want positive integers below n (vectors kept between rounds)", memory)
		}
		if m > strategy.BLTMaxBuffers {
			return nil, fmt.Sprintf("-memory %d: blt takes at most %d buffers", m, strategy.BLTMaxBuffers)
		}
		out = append(out, m)
	}
	return out, ""
}

// lbfgsOptions are the optimizers' options of -reltol and -maxiter, with
// -progress lines on stderr.
func lbfgsOptions(relTol float64, maxIter int, progress bool, stderr io.Writer) strategy.LBFGSOptions {
	lbfgs := strategy.LBFGSOptions{RelTol: relTol, MaxIter: maxIter}
	if progress {
		lbfgs.Progress = func(it int, loss float64) {
			if it%25 == 0 {
				fmt.Fprintf(stderr, "dpfl mechanism: L-BFGS iteration %d: tr(A^T A X^-1) = %.10g\n", it, loss)
			}
		}
		lbfgs.DualProgress = func(it int, res, bound float64) {
			if it%10 == 0 {
				fmt.Fprintf(stderr, "dpfl mechanism: multi-epoch dual iteration %d: multiplier residual %.2e, dual objective %.10g\n", it, res, bound)
			}
		}
	}
	return lbfgs
}

// workloadLabel names the workload in outputs: its -workload name, with
// the learning-rate schedule when there is one (prefix, momentum,
// identity and file:PATH otherwise, as before).
func workloadLabel(wl string, momentum float64, shape string, s aggregators.LRSchedule) string {
	if shape == "constant" || shape == "" || strings.HasPrefix(wl, "file:") {
		return wl
	}
	label := fmt.Sprintf("%s, lr %s warmup %d cooldown %d", wl, shape, s.Warmup, s.Cooldown)
	if s.Cooldown > 0 {
		label += fmt.Sprintf(" final %g", s.Final)
	}
	return label
}

// mechanismSetting is the participation pattern and workload the flags
// describe, or why they cannot be ("" when they can).
func mechanismSetting(part string, k, b int, wl string, n int, momentum float64, shape string, sched aggregators.LRSchedule, set map[string]bool) (participation.Schema, *strategy.Workload, string) {
	p, msg := mechanismParticipation(part, k, b, set)
	if msg != "" {
		return p, nil, msg
	}
	if strings.HasPrefix(wl, "file:") {
		return p, nil, "" // read by the caller
	}
	sched, msg = scheduleFlags(shape, sched, n, set)
	if msg != "" {
		return p, nil, msg
	}
	eta := sched.Factors()
	for _, e := range eta {
		if e == 0 {
			return p, nil, "the learning-rate schedule has a round with factor 0 (-final-lr 0): the workload would not be invertible"
		}
	}
	switch wl {
	case "prefix":
		if set["momentum"] {
			return p, nil, "-momentum applies only to -workload momentum"
		}
		return p, strategy.Momentum(n, 0, eta), ""
	case "momentum":
		if !(momentum >= 0 && momentum < 1) {
			return p, nil, "-momentum must be in [0,1)"
		}
		return p, strategy.Momentum(n, momentum, eta), ""
	case "identity":
		if set["momentum"] || set["lr-schedule"] {
			return p, nil, "-momentum and -lr-schedule do not apply to -workload identity"
		}
		return p, strategy.IdentityWorkload(n), ""
	}
	return p, nil, fmt.Sprintf("unknown -workload %q (want prefix, momentum or identity, or -workload-file)", wl)
}

// scheduleKeyFlags names the flags of the server section's learning-rate
// schedule keys.
var scheduleKeyFlags = map[string]string{"lr_schedule": "lr-schedule", "warmup_rounds": "warmup", "cooldown_rounds": "cooldown", "final_lr_fraction": "final-lr"}

// scheduleFlags is the learning-rate schedule of -lr-schedule, -warmup,
// -cooldown and -final-lr over n rounds, or why they cannot be: the flags
// are parsed into an experiments.ServerConfig, given its defaults and
// checked by its validation (ServerConfig.CheckSchedule), as the server
// section of a run's configuration is; the problems name the flags.
func scheduleFlags(shape string, s aggregators.LRSchedule, n int, set map[string]bool) (aggregators.LRSchedule, string) {
	sv := experiments.ServerConfig{LRSchedule: shape, WarmupRounds: s.Warmup, CooldownRounds: s.Cooldown}
	if set["final-lr"] {
		sv.FinalLRFraction = &s.Final
	}
	sv.NormalizeSchedule()
	msg := ""
	sv.CheckSchedule(n, func(key, format string, args ...any) {
		if msg == "" {
			msg = "-" + scheduleKeyFlags[key] + ": " + fmt.Sprintf(format, args...)
		}
	})
	return sv.Schedule(n), msg
}

// mechanismParticipation is the schema of -participation (a registered
// scheme whose pattern has a sensitivity) with -k and -b, or why the flags
// cannot be ("" when they can).
func mechanismParticipation(part string, k, b int, set map[string]bool) (participation.Schema, string) {
	var usable, grouped []string
	for _, kind := range participation.Kinds {
		if pt := kind.Pattern(); strategy.HasSensitivity(pt) {
			usable = append(usable, string(kind))
			if kind.Grouped() {
				grouped = append(grouped, string(kind))
			}
		}
	}
	kind := participation.Canonical(participation.Kind(part))
	if !slices.Contains(usable, string(kind)) {
		return participation.Schema{}, fmt.Sprintf("unknown -participation %q (want %s)", part, orList(usable))
	}
	if !kind.Grouped() {
		if set["k"] || set["b"] {
			return participation.Schema{}, fmt.Sprintf("-k and -b apply only to -participation %s", orList(grouped))
		}
		k, b = 0, 0
	} else if k < 1 || b < 1 {
		return participation.Schema{}, fmt.Sprintf("-participation %s needs -k ≥ 1 and -b ≥ 1", part)
	}
	return participation.Schema{Kind: kind, K: k, B: b}, ""
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// mechanismKey is a flag that sets an aggregator kind's own key.
type mechanismKey struct {
	flag, kind, key string
	set             func(c *aggregators.Config, f *mechanismFlags)
}

// mechanismKeyFlags are the flags that are an aggregator kind's own YAML
// keys: they are parsed into the kind's parameter struct of an
// aggregators.Config and checked by the kind's own validation, as the key
// of a run's configuration is, so a flag means what its key means (0: the
// key's default).
var mechanismKeyFlags = []mechanismKey{
	{"bands", "bandmf", "bands", func(c *aggregators.Config, f *mechanismFlags) { c.Bands = *f.bands }},
	{"nu", "nu-ftrl", "nu", func(c *aggregators.Config, f *mechanismFlags) { c.Nu = f.nu }},
	{"nu-bands", "nu-ftrl", "nu_coefficients", func(c *aggregators.Config, f *mechanismFlags) { c.NuCoefficients = *f.nuBands }},
	{"buffers", "blt", "buffers", func(c *aggregators.Config, f *mechanismFlags) { c.Buffers = *f.buffers }},
	{"restart-every", "tree", "restart_every", func(c *aggregators.Config, f *mechanismFlags) { c.RestartEvery = *f.restart }},
}

// mechanismKeys is the aggregator configuration of the set key flags (the
// keys of every kind they belong to, as a comparison evaluates them all).
func mechanismKeys(f *mechanismFlags, set map[string]bool) *aggregators.Config {
	c := new(aggregators.Config)
	for _, m := range mechanismKeyFlags {
		if set[m.flag] {
			m.set(c, f)
		}
	}
	return c
}

// checkMechanismKeys says why a key flag's value is wrong for the run r
// ("" when none is): the problem its kind's validation finds with the key,
// named by the flag.
func checkMechanismKeys(c *aggregators.Config, r aggregators.Run, set map[string]bool) string {
	for _, m := range mechanismKeyFlags {
		if !set[m.flag] {
			continue
		}
		one := *c // the kind validates only its own keys
		one.Kind = m.kind
		one.Normalize()
		msg := ""
		aggregators.Lookup(m.kind).ValidateOwn(&one, r, func(key, format string, args ...any) {
			if key == m.key && msg == "" {
				msg = "-" + m.flag + ": " + fmt.Sprintf(format, args...)
			}
		})
		if msg != "" {
			return msg
		}
	}
	return ""
}

// checkMechanismFlags says why the strategy flags are wrong ("" when they
// are not).
func checkMechanismFlags(m aggregators.Name, p participation.Pattern, set map[string]bool, name string, gap, relTol float64, maxIter int) string {
	switch {
	case p.Once() && m.Strategy == "blt" && !set["buffers"] && !set["bands"]:
		return "-strategy blt under single participation needs -buffers (or -bands: the BandMF memory to match)"
	case !(gap > 0 && gap < 1):
		return "-gap must be in (0,1)"
	case !(relTol > 0 && relTol < 1):
		return "-reltol must be in (0,1)"
	case maxIter < 1:
		return "-maxiter must be positive"
	case p.Once() && (m.Strategy == "bandmf" || m.Strategy == "toeplitz") && !set["bands"]:
		return fmt.Sprintf("-strategy %s under single participation needs -bands", m.Strategy)
	case p.Once() && (m.Strategy == "multi-epoch" || m.Strategy == "multi-epoch-f" || m.Strategy == "bandmf-f"):
		return fmt.Sprintf("-strategy %s needs -participation kb or minsep (optimal is the single-participation optimum)", name)
	}
	return ""
}

// cmdMechanism compares noise mechanisms offline.
func cmdMechanism(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Parsing builds the workload (dense n×n) and may read a large
	// workload file: it runs aside, so that a signal ends it at once.
	type parsed struct {
		req  mechanismRequest
		code int
		ok   bool
	}
	done := make(chan parsed, 1)
	go func() {
		req, code, ok := parseMechanism(args, stderr)
		done <- parsed{req, code, ok}
	}()
	var req mechanismRequest
	select {
	case p := <-done:
		if !p.ok {
			return p.code
		}
		req = p.req
	case <-ctx.Done():
		return exitInterrupted
	}
	if len(req.memories) > 0 {
		return memoryComparison(ctx, req, stdout, stderr)
	}
	if req.name.Strategy != "" {
		c, err := evaluateMechanism(ctx, req)
		if err != nil {
			return mechFail(ctx, stderr, err)
		}
		if req.json {
			rep := newMechanismReport(c, req.workload)
			rep.RunAs = runAs(c, req.cfg)
			return mechWriteJSON(ctx, stdout, stderr, rep)
		}
		writeMechanismText(stdout, c, runAs(c, req.cfg))
		return privacySection(ctx, stdout, stderr, req)
	}
	var progress func(string)
	run, skipped := comparisonSet(req.cfg.Workload.N(), req.cfg.Nu < 0, req.all)
	prog := newMechProgress(stderr, len(run))
	if !req.quiet {
		prog.hook(&req.cfg)
		progress = func(s string) { prog.begin(displayName(s)) }
	}
	rows := compareMechanisms(ctx, req.cfg, skipped, progress)
	prog.end()
	if err := ctx.Err(); err != nil {
		return mechFail(ctx, stderr, err)
	}
	if req.json {
		out := make([]strategy.Report, len(rows))
		for i, r := range rows {
			out[i] = newMechanismReport(r, req.workload)
			out[i].RunAs = runAs(r, req.cfg)
		}
		return mechWriteJSON(ctx, stdout, stderr, out)
	}
	writeMechanismTable(stdout, req, rows)
	return privacySection(ctx, stdout, stderr, req)
}

// evaluateMechanism builds and evaluates the one named mechanism.
func evaluateMechanism(ctx context.Context, req mechanismRequest) (strategy.Comparison, error) {
	s, err := strategy.Build(ctx, req.name.Strategy, req.cfg)
	if err != nil {
		return strategy.Comparison{}, err
	}
	m, err := strategy.EvaluateContext(ctx, s, req.cfg.Workload, req.cfg.Participation)
	if err != nil {
		return strategy.Comparison{}, err
	}
	c := strategy.Comparison{Metrics: m}
	if o, ok := s.(strategy.Optimized); ok {
		st := o.Status()
		c.Status = &st
	}
	return c, nil
}

// displayName is the mechanism name of a strategy name (aggregators.Names),
// with the strategy's variant suffix: nu-b8 is nu-ftrl-b8.
func displayName(strategyName string) string {
	n := mechanismNameOf(strategyName)
	if n.Name == "" {
		return strategyName
	}
	return n.Name + strings.TrimPrefix(strategyName, n.Strategy)
}

// mechanismNameOf is the entry of aggregators.Names of a strategy name, or
// of the longest strategy it is a variant of (zero if none).
func mechanismNameOf(strategyName string) aggregators.Name {
	var best aggregators.Name
	for _, n := range aggregators.Names {
		if n.Strategy == strategyName {
			return n
		}
		if strings.HasPrefix(strategyName, n.Strategy+"-") && len(n.Strategy) > len(best.Strategy) {
			best = n
		}
	}
	return best
}

// mechanismTableWidth is the widest line the text outputs print: long
// parameters are abbreviated (-json has them all).
const mechanismTableWidth = 120

func writeMechanismTable(w io.Writer, req mechanismRequest, rows []strategy.Comparison) {
	fmt.Fprintf(w, "n = %d, workload %s, participation %s, sigma = 1, clip = 1; best first\n", req.cfg.Workload.N(), req.workload, req.cfg.Participation)
	fmt.Fprintln(w, "sens: sensitivity; worst: std of the noisiest round; time/d, mem/d: noise cost per round in units of d")
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mechanism\tsens\t\tloss\trmse\tworst\ttime/d\tmem/d\t use in a run")
	for _, r := range rows {
		m := r.Metrics
		use := runAs(r, req.cfg)
		if r.Err != nil {
			fmt.Fprintf(tw, "%s\t-\t\t-\t-\t-\t-\t-\t %s\n", displayName(m.Strategy), use)
			continue
		}
		ex := "exact"
		if !m.Sensitivity.Exact {
			ex = "bound"
		}
		fmt.Fprintf(tw, "%s\t%.6g\t%s\t%.6g\t%.6g\t%.6g\t%g\t%g\t %s\n", displayName(m.Strategy), m.Sensitivity.Value, ex, m.Loss, m.RMSE, m.MaxRoundStd, m.Cost.Time, m.Cost.Memory, use)
	}
	tw.Flush()
	w.Write(trimIndent(table.Bytes()))
	fmt.Fprintln(w, "\noptimizer and parameters:")
	for _, r := range rows {
		line := "  " + displayName(r.Metrics.Strategy) + ": "
		if r.Err != nil {
			line += "skipped: " + oneLine(r.Err)
		} else {
			line += statusLine(r.Status)
			if ps := shortParameters(r.Metrics.Parameters); ps != "" {
				line += "; " + ps
			}
		}
		fmt.Fprintln(w, clipLine(line, mechanismTableWidth))
	}
}

// trimIndent removes the spaces all lines of b begin with (the right-aligned
// table's padding before its first column).
func trimIndent(b []byte) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	indent := -1
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if n := len(l) - len(bytes.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	if indent <= 0 {
		return b
	}
	for i, l := range lines {
		if len(l) >= indent {
			lines[i] = l[indent:]
		}
	}
	return bytes.Join(lines, nil)
}

// clipLine cuts s to width runes, ending in "…" when cut.
func clipLine(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return string(r[:width-1]) + "…"
}

// shortParameters is Parameters.String with each list of more than three
// values cut to its first three and a note (-json has them all).
func shortParameters(p strategy.Parameters) string {
	const keep = 3
	return p.Format(func(v []float64, what string) string {
		note := ""
		switch what {
		case "theta":
			note = fmt.Sprintf(" (%d buffers)", len(v))
		case "coefficients":
			note = fmt.Sprintf(" (%d coefficients; -json for all)", len(v))
		}
		parts := make([]string, 0, keep+1)
		for i, x := range v {
			if i == keep {
				parts = append(parts, "…"+note)
				break
			}
			parts = append(parts, fmt.Sprintf("%.4g", x))
		}
		s := "[" + strings.Join(parts, " ") + "]"
		if what == "omega" && len(v) > keep {
			s += " (-json for all)"
		}
		return s
	})
}

// runAs says how a row can be used in a run: the aggregator.kind and the
// keys that reproduce it, or "offline only" for strategies no aggregator
// kind runs (the -f variants and toeplitz).
func runAs(c strategy.Comparison, cfg strategy.Config) string {
	n := mechanismNameOf(c.Metrics.Strategy)
	if n.Kind == "" {
		return "offline only"
	}
	s := n.Kind
	p := c.Metrics.Parameters
	switch n.Strategy {
	case "tree", "tree-online", "tree-full":
		if n.Strategy != "tree-online" { // online is the default estimator
			s += " estimator=" + map[string]string{"tree": "vanilla", "tree-full": "full"}[n.Strategy]
		}
		if cfg.RestartEvery > 0 {
			s += fmt.Sprintf(" restart_every=%d", cfg.RestartEvery)
		}
	case "multi-epoch":
		s += " multi_epoch=true"
	case "bandmf":
		bands := cfg.Bands
		if bands == 0 {
			bands = strategy.DefaultBands(cfg.Participation.Separation(), c.Metrics.N)
		}
		if bands > 0 {
			s += fmt.Sprintf(" bands=%d", bands)
		}
	case "nu":
		if p.Nu != nil {
			s += fmt.Sprintf(" nu=%.6g", *p.Nu)
		}
		if cfg.NuBands > 0 {
			s += fmt.Sprintf(" nu_coefficients=%d", cfg.NuBands)
		}
	case "blt":
		if len(p.Theta) > 0 {
			s += fmt.Sprintf(" buffers=%d", len(p.Theta))
		}
	}
	return s
}

// newMechanismReport is the -json form of one mechanism: the strategy's
// report (strategy.Report) under the mechanism's name.
func newMechanismReport(c strategy.Comparison, workload string) strategy.Report {
	r := strategy.NewReport(c, workload)
	r.Mechanism = displayName(c.Metrics.Strategy)
	if c.Err != nil {
		r.Error = oneLine(c.Err)
	}
	return r
}

func statusLine(st *strategy.Status) string {
	if st == nil {
		return "closed form"
	}
	s := fmt.Sprintf("%s: %d iterations", st.Method, st.Iterations)
	if !math.IsNaN(st.Gap) {
		s += fmt.Sprintf(", gap %.2e", st.Gap)
	}
	if !st.Converged {
		s += ", NOT converged"
	}
	if st.Cached {
		s += ", cached"
	}
	return s
}

func writeMechanismText(w io.Writer, c strategy.Comparison, use string) {
	m := c.Metrics
	ex := "exact"
	if !m.Sensitivity.Exact {
		ex = "upper bound"
	}
	fmt.Fprintf(w, "mechanism       %s\n", displayName(m.Strategy))
	fmt.Fprintf(w, "strategy        %s\n", m.Strategy)
	fmt.Fprintf(w, "n               %d\n", m.N)
	if ps := shortParameters(m.Parameters); ps != "" {
		fmt.Fprintf(w, "parameters      %s\n", ps)
	}
	fmt.Fprintf(w, "participation   %s\n", m.Participation)
	fmt.Fprintf(w, "sensitivity     %.10g (%s; %s)\n", m.Sensitivity.Value, ex, m.Sensitivity.Method)
	fmt.Fprintf(w, "loss            %.10g   (sens^2 ||B||_F^2, sigma = 1)\n", m.Loss)
	fmt.Fprintf(w, "rmse            %.10g\n", m.RMSE)
	fmt.Fprintf(w, "worst round     %.10g   (std of the noisiest round)\n", m.MaxRoundStd)
	if m.ResidualEstimated {
		fmt.Fprintf(w, "residual        %.3g   (||B Y - A||_F / ||A||_F for X = Y^T Y, estimated from 4 random probes: X and C are not formed)\n", m.Residual)
	} else {
		fmt.Fprintf(w, "residual        %.3g   (||BC - A||_F / ||A||_F)\n", m.Residual)
	}
	fmt.Fprintf(w, "noise per round time %g d, memory %g d (%s)\n", m.Cost.Time, m.Cost.Memory, m.Cost.Note)
	fmt.Fprintf(w, "optimizer       %s\n", statusLine(c.Status))
	if c.Status != nil && c.Status.Message != "" {
		fmt.Fprintf(w, "                %s\n", c.Status.Message)
	}
	fmt.Fprintf(w, "use in a run    %s\n", use)
}

func mechWriteJSON(ctx context.Context, stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return mechFail(ctx, stderr, err)
	}
	return exitOK
}

func mechFail(ctx context.Context, stderr io.Writer, err error) int {
	return failed(ctx, stderr, "mechanism", err)
}

// memoryRow is one line of the -memory comparison: BLT with m buffers and
// BandMF with m+1 bands, both keeping m noise vectors between rounds.
type memoryRow struct {
	Memory int             `json:"memory_vectors"`
	BLT    strategy.Report `json:"blt"`
	BandMF strategy.Report `json:"bandmf"`
	// Ratio is BLT's loss over BandMF's (below 1: BLT is better).
	Ratio float64 `json:"loss_ratio,omitempty"`
}

// memoryComparison prints BLT against BandMF at each noise memory of
// req.memories.
func memoryComparison(ctx context.Context, req mechanismRequest, stdout, stderr io.Writer) int {
	var rows []memoryRow
	for _, m := range req.memories {
		row := memoryRow{Memory: m}
		for i, name := range []string{"blt", "bandmf"} {
			r := req
			r.name = aggregators.Name{Name: name, Strategy: name}
			r.cfg.Buffers, r.cfg.Bands = m, m+1
			if !req.json {
				fmt.Fprintf(stderr, "dpfl mechanism: memory %d: %s...\n", m, name)
			}
			c, err := evaluateMechanism(ctx, r)
			if err != nil {
				if ctx.Err() != nil {
					return mechFail(ctx, stderr, err)
				}
				c = strategy.Comparison{Metrics: strategy.Metrics{Strategy: name, N: req.cfg.Workload.N(), Participation: req.cfg.Participation.String()}, Err: err}
			}
			rep := newMechanismReport(c, req.workload)
			if i == 0 {
				row.BLT = rep
			} else {
				row.BandMF = rep
			}
		}
		if row.BLT.Error == "" && row.BandMF.Error == "" && row.BandMF.Loss > 0 {
			row.Ratio = row.BLT.Loss / row.BandMF.Loss
		}
		rows = append(rows, row)
	}
	if req.json {
		return mechWriteJSON(ctx, stdout, stderr, rows)
	}
	fmt.Fprintf(stdout, "n = %d, workload %s, participation %s, sigma = 1, clip = 1\n", req.cfg.Workload.N(), req.workload, req.cfg.Participation)
	fmt.Fprintf(stdout, "BLT with m buffers vs BandMF with m+1 bands: both keep m noise vectors of the model's size between rounds\n")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "memory m\tBLT sens\tBLT loss\tBLT rmse\tBandMF sens\tBandMF loss\tBandMF rmse\tBLT/BandMF loss\t")
	cell := func(r strategy.Report) string {
		if r.Error != "" {
			return "-\t-\t-"
		}
		ex := ""
		if !r.SensitivityExact {
			ex = " (bound)"
		}
		return fmt.Sprintf("%.6g%s\t%.6g\t%.6g", r.Sensitivity, ex, r.Loss, r.RMSE)
	}
	for _, r := range rows {
		ratio := "-"
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.4f", r.Ratio)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t\n", r.Memory, cell(r.BLT), cell(r.BandMF), ratio)
	}
	tw.Flush()
	for _, r := range rows {
		for _, rep := range []strategy.Report{r.BLT, r.BandMF} {
			if rep.Error != "" {
				fmt.Fprintf(stdout, "memory %d, %s: %s\n", r.Memory, rep.Mechanism, rep.Error)
			}
		}
	}
	return exitOK
}
