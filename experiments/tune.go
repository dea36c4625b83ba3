package experiments

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"dpfl/results"
)

// TuneConfig is a grid's optional tune: section, a two-stage protocol that
// spends the compute of a full grid's extra seeds only where it is reported:
//
//	tune:
//	  keys: [server.lr]   # the varied paths that are hyperparameters
//	  seeds: [1]          # the seeds that try every setting of keys
//
// Stage 1 runs every point whose seed is in seeds. Each group of points that
// differ only in keys and seed (a plotted point: an aggregator at an ε) then
// chooses the setting with the highest mean final_val_accuracy over the
// tuning seeds (ties: the first setting in sorted order, as dpfl plot), and
// stage 2 runs the group's other seeds at that setting only. RunGrid goes
// group by group: a group's stage 2 starts as soon as its stage 1 has
// finished, before the next groups' stage 1. Selection is on
// the validation split (eval.validation, required), so the test accuracies
// of the tuning seeds are not biased by the choice. dpfl plot chooses the
// same setting (on the seeds every setting ran) and averages all its seeds.
type TuneConfig struct {
	Keys  []string `yaml:"keys"`
	Seeds []uint64 `yaml:"seeds"`
}

// Tune stages of a grid point (Grid.Stage).
const (
	StageTune      = "tune"       // a tuning seed's point: always runs
	StageChosen    = "chosen"     // another seed at its group's chosen setting
	StageNotChosen = "not-chosen" // another seed at a setting its group did not choose
	StageWaiting   = "waiting"    // another seed whose group's tuning runs have not all finished
)

// parseTune reads and checks the tune: section against the expanded grid.
func (gp *gridParser) parseTune(n *yaml.Node, g *Grid) {
	var tc TuneConfig
	src := &Source{File: gp.file, lines: map[string]int{}}
	if err := decodeNode(n, src, &tc); err != nil {
		gp.problems = append(gp.problems, err)
		return
	}
	switch {
	case len(tc.Keys) == 0:
		gp.bad(n, "tune.keys", "want the varied paths to tune (like [server.lr])")
	case len(tc.Seeds) == 0:
		gp.bad(n, "tune.seeds", "want the seeds that try every setting (like [1])")
	case !slices.Contains(g.Varied, "seed"):
		gp.bad(n, "tune", "needs seed varied in grid: (the tuning seeds and the others)")
	}
	for _, k := range tc.Keys {
		switch {
		case k == "seed":
			gp.bad(n, "tune.keys", "seed is not a hyperparameter")
		case !slices.Contains(g.Varied, k):
			gp.bad(n, "tune.keys", "%s is not varied in grid: or zip: (varied: %s)", k, strings.Join(g.Varied, ", "))
		}
	}
	seeds := map[uint64]bool{}
	for _, p := range g.Points {
		seeds[p.Config.Seed] = true
		if !(p.Config.Eval.Validation > 0) {
			gp.bad(n, "tune", "point %d (%s) has no eval.validation: tuning chooses on a validation split, so that the reported test accuracy is not the one the choice was made on", p.Index+1, p.Label(g.Varied))
			break
		}
	}
	for _, s := range tc.Seeds {
		if !seeds[s] {
			gp.bad(n, "tune.seeds", "seed %d is not among the grid's seeds", s)
		}
	}
	if len(gp.problems) == 0 {
		g.Tune = &tc
	}
}

// tuneRole returns p's group (its varied values other than the tuned keys
// and the seed), its setting of the tuned keys, and whether it is a tuning
// seed's point.
func (g *Grid) tuneRole(p Point) (group, setting string, tuning bool) {
	var gs, ss []string
	for i, v := range g.Varied {
		switch {
		case v == "seed":
		case slices.Contains(g.Tune.Keys, v):
			ss = append(ss, v+"="+p.Values[i])
		default:
			gs = append(gs, v+"="+p.Values[i])
		}
	}
	return strings.Join(gs, ", "), strings.Join(ss, ", "), slices.Contains(g.Tune.Seeds, p.Config.Seed)
}

// Choices reads the tuning points' runs under out and returns each group's
// chosen setting; a group some of whose tuning points (of any shard) have
// not finished is absent.
func (g *Grid) Choices(out string) map[string]string {
	return g.choices(func(p Point) (*results.Summary, bool) { return Finished(out, p) })
}

// choices is Choices with the finished runs looked up by finished.
func (g *Grid) choices(finished func(Point) (*results.Summary, bool)) map[string]string {
	if g.Tune == nil {
		return nil
	}
	type score struct {
		sum float64
		n   int
	}
	scores := map[string]map[string]*score{}
	undecided := map[string]bool{}
	for _, p := range g.Points {
		group, setting, tuning := g.tuneRole(p)
		if !tuning {
			continue
		}
		s, ok := finished(p)
		if !ok {
			undecided[group] = true
			continue
		}
		v := 0.0 // a diverged run, or one without a finite validation accuracy, loses
		if s.FinalValAccuracy != nil && !math.IsNaN(*s.FinalValAccuracy) && !math.IsInf(*s.FinalValAccuracy, 0) {
			v = *s.FinalValAccuracy
		}
		if scores[group] == nil {
			scores[group] = map[string]*score{}
		}
		if scores[group][setting] == nil {
			scores[group][setting] = &score{}
		}
		scores[group][setting].sum += v
		scores[group][setting].n++
	}
	choices := map[string]string{}
	for group, settings := range scores {
		if undecided[group] {
			continue
		}
		names := make([]string, 0, len(settings))
		for s := range settings {
			names = append(names, s)
		}
		slices.Sort(names)
		best, bestMean := "", math.Inf(-1)
		for _, s := range names {
			if m := settings[s].sum / float64(settings[s].n); m > bestMean {
				best, bestMean = s, m
			}
		}
		choices[group] = best
	}
	return choices
}

// Stage says whether p runs under the grid's tune: protocol given the
// groups' choices (Choices): StageTune, StageChosen, StageNotChosen or
// StageWaiting; "" when the grid has no tune: section.
func (g *Grid) Stage(p Point, choices map[string]string) string {
	if g.Tune == nil {
		return ""
	}
	group, setting, tuning := g.tuneRole(p)
	if tuning {
		return StageTune
	}
	chosen, ok := choices[group]
	switch {
	case !ok:
		return StageWaiting
	case chosen == setting:
		return StageChosen
	}
	return StageNotChosen
}

// Planned returns the points of points that will run (finished or not):
// all of them without a tune: section; with one, the tuning seeds' points,
// the chosen settings' points, and for each group still tuning one
// placeholder per other seed (the first setting), so that counts and
// progress estimates are right before the choice is known.
func (g *Grid) Planned(out string, points []Point) []Point {
	if g.Tune == nil {
		return points
	}
	choices := g.Choices(out)
	var planned []Point
	seen := map[string]bool{}
	for _, p := range points {
		switch g.Stage(p, choices) {
		case StageTune, StageChosen:
			planned = append(planned, p)
		case StageWaiting:
			group, _, _ := g.tuneRole(p)
			key := group + "\x00" + strconv.FormatUint(p.Config.Seed, 10)
			if !seen[key] {
				seen[key] = true
				planned = append(planned, p)
			}
		}
	}
	return planned
}

// TuneSummary is one line on the tune: protocol for dpfl grid.
func (g *Grid) TuneSummary(out string) string {
	if g.Tune == nil {
		return ""
	}
	choices := g.Choices(out)
	count := map[string]int{}
	groups := map[string]bool{}
	for _, p := range g.Points {
		count[g.Stage(p, choices)]++
		group, _, _ := g.tuneRole(p)
		groups[group] = true
	}
	return fmt.Sprintf("tuning %s on seeds %v: %d tuning points; %d of %d groups chosen (%d points of other seeds at the chosen settings, %d not chosen, %d waiting)",
		strings.Join(g.Tune.Keys, ", "), g.Tune.Seeds, count[StageTune], len(choices), len(groups), count[StageChosen], count[StageNotChosen], count[StageWaiting])
}
