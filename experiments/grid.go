package experiments

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"dpfl/results/regular"
)

// Grid is an expanded experiment grid: a base configuration, the axes that
// vary, and one point per combination.
//
// A grid file is a run configuration plus the keys grid:, zip:, plot:
// (the figures' axes and series, see PlotConfig) and tune: (a two-stage
// protocol that tunes hyperparameters on some seeds, see TuneConfig):
//
//	grid:             # dotted path → list of values; every combination is run
//	  aggregator.kind: [dpfedavg, tree, bandmf]
//	  privacy.epsilon: [1, 4, 16]
//	zip:              # groups of paths whose lists vary together (equal lengths)
//	  - server.lr: [0.5, 1.0]
//	    server.momentum: [0.9, 0.0]
//
// Expansion is deterministic: axes are the grid keys in the order written,
// then the zip groups in order; the first axis varies slowest. Points whose
// normalized configurations coincide are run once (the first one is kept).
type Grid struct {
	File   string
	Name   string   // the base configuration's name
	Varied []string // the dotted paths that vary, in axis order
	Points []Point
	// Duplicates counts combinations dropped because an earlier point has
	// the same normalized configuration.
	Duplicates int
	// Plot is the grid file's optional plot: section, the defaults of the
	// figures dpfl grid draws at the end.
	Plot PlotConfig
	// Tune is the grid file's optional tune: section (see TuneConfig); nil:
	// every point runs.
	Tune *TuneConfig
}

// PlotConfig chooses the axes of a grid's figures (index.csv columns or
// varied keys; see dpfl plot). Empty fields take dpfl plot's defaults.
type PlotConfig struct {
	X  string `yaml:"x"`  // default epsilon
	Y  string `yaml:"y"`  // default accuracy
	By string `yaml:"by"` // series; default aggregator
}

// Point is one configuration of a grid.
type Point struct {
	Index  int      // position in the expansion (after duplicates are dropped)
	ID     string   // RunID of Config and Inputs
	Inputs Inputs   // fingerprints of the input files Config reads
	Values []string // the value of each of Grid.Varied, as written
	// Unset marks the Values that are YAML null (the key left unset at
	// this point, as a zip partner often is): index.csv leaves them empty.
	Unset  []bool
	Config *Config
}

// Cell is the point's value of Grid.Varied[i] as index.csv writes it: as
// written, or empty when unset.
func (p Point) Cell(i int) string {
	if i < len(p.Unset) && p.Unset[i] {
		return ""
	}
	return p.Values[i]
}

// Dir is the point's run folder name under a grid's output folder.
func (p Point) Dir() string { return p.Config.Name + "-" + p.ID }

// Label is "path=value, ..." for messages.
func (p Point) Label(varied []string) string {
	parts := make([]string, len(varied))
	for i, v := range varied {
		parts[i] = v + "=" + p.Values[i]
	}
	return strings.Join(parts, ", ")
}

// axis is one dimension of a grid: one or more paths with equally long value
// lists.
type axis struct {
	paths  []string
	keys   []*yaml.Node   // the key node of each path (for lines)
	values [][]*yaml.Node // values[i][j]: value j of path i
}

func (a axis) len() int { return len(a.values[0]) }

// LoadGrid reads and expands the grid file at path, with the default Limits.
func LoadGrid(path string) (*Grid, error) { return Limits{}.LoadGrid(path) }

// ParseGrid expands a grid file's bytes with the default Limits; file names
// it in messages. Every problem is reported at once: bad grid keys and values
// with their lines, and each invalid point with its varied values.
func ParseGrid(data []byte, file string) (*Grid, error) { return Limits{}.ParseGrid(data, file) }

// LoadGrid is the package's LoadGrid with every point's memory estimate held
// to l.
func (l Limits) LoadGrid(path string) (*Grid, error) {
	data, err := regular.ReadMax(path, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	return l.ParseGrid(data, path)
}

// ParseGrid is the package's ParseGrid with every point's memory estimate
// held to l.
func (l Limits) ParseGrid(data []byte, file string) (*Grid, error) {
	root, err := parseDocument(data, file, "grid")
	if err != nil {
		return nil, err
	}
	if root.Kind != yaml.MappingNode {
		return nil, Problem{File: file, Line: root.Line, Msg: "want a mapping: a run configuration plus grid: and zip: keys"}
	}
	gp := &gridParser{file: file, seen: map[string]bool{}}
	sec := gp.sections(root)
	axes := gp.axes(sec)
	g := &Grid{File: file}
	if sec.plot != nil {
		src := &Source{File: file, lines: map[string]int{}}
		if err := decodeNode(sec.plot, src, &g.Plot); err != nil {
			gp.problems = append(gp.problems, err)
		}
	}
	if len(axes) == 0 && len(gp.problems) == 0 {
		line := sec.gridLine
		if line == 0 {
			line = root.Line
		}
		return nil, Problem{File: file, Line: line, Path: "grid", Msg: "nothing varies: add grid: (dotted path → list of values) or zip: groups; for a single configuration use dpfl run"}
	}
	// The points are expanded over the axes that are well formed even when
	// others are not, so that the problems of both are reported together.
	if err := l.expand(g, sec.base, axes); err != nil || len(gp.problems) > 0 {
		return nil, errors.Join(append(gp.problems, err)...)
	}
	if sec.tune != nil {
		gp.parseTune(sec.tune, g)
		if len(gp.problems) > 0 {
			return nil, errors.Join(gp.problems...)
		}
	}
	g.Name = sec.name
	if g.Name == "" {
		g.Name = g.Points[0].Config.Name
	}
	return g, nil
}

// gridParser collects a grid file's problems while it is read.
type gridParser struct {
	file     string
	problems []error
	seen     map[string]bool // the varied paths so far
}

func (gp *gridParser) bad(n *yaml.Node, path, format string, args ...any) {
	gp.problems = append(gp.problems, Problem{File: gp.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// gridSections is a grid file split into the base configuration and its
// grid:, zip:, plot: and tune: sections.
type gridSections struct {
	base                  *yaml.Node
	grid, zip, plot, tune *yaml.Node
	gridLine              int
	name                  string // the base configuration's name
}

// sections splits the grid file's top-level mapping.
func (gp *gridParser) sections(root *yaml.Node) gridSections {
	sec := gridSections{base: &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line, Column: root.Column}}
	lines := map[string]int{} // line of grid:, zip:, plot:, tune:
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := resolveAlias(root.Content[i]), resolveAlias(root.Content[i+1])
		if k.Value == "grid" || k.Value == "zip" || k.Value == "plot" || k.Value == "tune" {
			if first, dup := lines[k.Value]; dup {
				gp.bad(k, k.Value, "given twice (first at line %d)", first)
				continue
			}
			lines[k.Value] = k.Line
		}
		switch k.Value {
		case "grid":
			sec.grid, sec.gridLine = v, k.Line
		case "zip":
			sec.zip = v
		case "plot":
			sec.plot = v
		case "tune":
			sec.tune = v
		default:
			if k.Value == "name" && v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" {
				// The grid's name names its default output folder: check
				// it even when every point varies the name.
				sec.name = v.Value
				if msg := nameProblem(sec.name); msg != "" {
					gp.bad(v, "name", "%s", msg)
				}
			}
			sec.base.Content = append(sec.base.Content, k, v)
		}
	}
	return sec
}

// resolveAlias returns the node an alias names, or n.
func resolveAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}

// axes reads the grid: axes, then the zip: groups.
func (gp *gridParser) axes(sec gridSections) []axis {
	var axes []axis
	if g := sec.grid; g != nil {
		if g.Kind != yaml.MappingNode {
			gp.bad(g, "grid", "want a mapping of dotted key paths to lists of values")
		} else {
			for i := 0; i+1 < len(g.Content); i += 2 {
				var a axis
				if gp.addPath(&a, g.Content[i], g.Content[i+1], "grid") {
					axes = append(axes, a)
				}
			}
		}
	}
	if z := sec.zip; z != nil {
		if z.Kind != yaml.SequenceNode {
			gp.bad(z, "zip", "want a list of groups, each a mapping of dotted key paths to equally long lists")
		} else {
			for gi, g := range z.Content {
				if a, ok := gp.zipGroup(resolveAlias(g), fmt.Sprintf("zip[%d]", gi)); ok {
					axes = append(axes, a)
				}
			}
		}
	}
	return axes
}

// zipGroup reads one zip: group, an axis whose paths vary together.
func (gp *gridParser) zipGroup(g *yaml.Node, where string) (axis, bool) {
	var a axis
	if g.Kind != yaml.MappingNode || len(g.Content) == 0 {
		gp.bad(g, where, "want a mapping of dotted key paths to equally long lists")
		return a, false
	}
	ok := true
	for i := 0; i+1 < len(g.Content); i += 2 {
		ok = gp.addPath(&a, g.Content[i], g.Content[i+1], where) && ok
	}
	if !ok {
		return a, false
	}
	for i := range a.paths[1:] {
		if len(a.values[i+1]) != len(a.values[0]) {
			gp.bad(a.keys[i+1], where+"."+a.paths[i+1], "has %d values but %s has %d: lists in a zip group vary together and need equal lengths",
				len(a.values[i+1]), a.paths[0], len(a.values[0]))
			ok = false
		}
	}
	return a, ok
}

// addPath adds the path k with the values v to the axis a, or reports why
// it cannot vary.
func (gp *gridParser) addPath(a *axis, k, v *yaml.Node, where string) bool {
	k, v = resolveAlias(k), resolveAlias(v)
	path := k.Value
	why := checkPath(path)
	switch {
	case path == "" || strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") || strings.Contains(path, ".."):
		gp.bad(k, where, "%q is not a dotted key path (like privacy.epsilon)", path)
		return false
	case path == "grid" || path == "zip" || path == "plot" || path == "tune":
		gp.bad(k, where, "%q cannot vary", path)
		return false
	case why != "":
		gp.bad(k, where+"."+path, "%s", why)
		return false
	case gp.seen[path]:
		gp.bad(k, where+"."+path, "varied twice (each path may appear once in grid: and zip:)")
		return false
	case overlap(gp.seen, path) != "":
		gp.bad(k, where+"."+path, "overlaps %s, also varied: vary a section or the keys inside it, not both", overlap(gp.seen, path))
		return false
	case v.Kind != yaml.SequenceNode:
		gp.bad(v, where+"."+path, "want a list of values")
		return false
	case len(v.Content) == 0:
		gp.bad(v, where+"."+path, "empty list: give at least one value")
		return false
	}
	gp.seen[path] = true
	a.paths = append(a.paths, path)
	a.keys = append(a.keys, k)
	a.values = append(a.values, v.Content)
	return true
}

// expand sets g's varied paths and points: every combination of the axes
// over the base configuration (first axis slowest), decoded, validated and
// identified; points whose configurations coincide are kept once.
func (l Limits) expand(g *Grid, base *yaml.Node, axes []axis) error {
	for _, a := range axes {
		g.Varied = append(g.Varied, a.paths...)
	}
	total := 1
	for _, a := range axes {
		total *= a.len()
		if total > 1_000_000 {
			return Problem{File: g.File, Path: "grid", Msg: "more than 1,000,000 points: split the grid"}
		}
	}
	// Each distinct problem is reported once, with the points it affects:
	// a mistake in the base, or in one value of an axis, is usually shared
	// by many points.
	type problem struct {
		err    error
		points []int // 1-based, ascending
		label  string
	}
	var problems []*problem
	byText := map[string]*problem{}
	l.populations = map[string]int{}
	ids := map[string]int{}
	fp := fingerprinter{}
	idx := make([]int, len(axes)) // odometer, first axis slowest
	for n := 0; n < total; n++ {
		pt, values, unset := combination(base, axes, idx)
		cfg, in, err, inErr := l.point(pt, g.File, fp)
		if inErr != nil {
			err = inErr
		}
		label := Point{Values: values}.Label(g.Varied)
		if err != nil {
			for _, e := range flatten(err) {
				key := e.Error()
				p := byText[key]
				if p == nil {
					p = &problem{err: e, label: label}
					byText[key] = p
					problems = append(problems, p)
				}
				if k := len(p.points); k == 0 || p.points[k-1] != n+1 {
					p.points = append(p.points, n+1)
				}
			}
		} else {
			id := RunID(cfg, in)
			if _, dup := ids[id]; dup {
				g.Duplicates++
			} else {
				ids[id] = len(g.Points)
				g.Points = append(g.Points, Point{Index: len(g.Points), ID: id, Inputs: in, Values: values, Unset: unset, Config: cfg})
			}
		}
		for ai := len(axes) - 1; ai >= 0; ai-- {
			idx[ai]++
			if idx[ai] < axes[ai].len() {
				break
			}
			idx[ai] = 0
		}
	}
	const maxProblems = 20
	var errs []error
	for i, p := range problems {
		if i == maxProblems {
			errs = append(errs, fmt.Errorf("... and %d more problems of invalid points", len(problems)-maxProblems))
			break
		}
		switch {
		case len(p.points) == total && total > 1:
			errs = append(errs, fmt.Errorf("every grid point (%d): %w", total, p.err))
		case len(g.Varied) == 0:
			errs = append(errs, fmt.Errorf("the base configuration: %w", p.err))
		case len(p.points) == 1:
			errs = append(errs, fmt.Errorf("grid point %d (%s): %w", p.points[0], p.label, p.err))
		default:
			errs = append(errs, fmt.Errorf("grid points %s (%d of %d): %w", describePoints(p.points), len(p.points), total, p.err))
		}
	}
	return errors.Join(errs...)
}

// combination is the base configuration with value idx[i] of each axis i
// set, and those values as written.
func combination(base *yaml.Node, axes []axis, idx []int) (*yaml.Node, []string, []bool) {
	pt := deepCopy(base)
	var values []string
	var unset []bool
	for ai, a := range axes {
		for pi, path := range a.paths {
			v := a.values[pi][idx[ai]]
			setPath(pt, path, a.keys[pi], deepCopy(v))
			values = append(values, nodeString(v))
			unset = append(unset, v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null")
		}
	}
	return pt, values, unset
}

// point decodes, normalizes and validates one point's configuration (err)
// and fingerprints its inputs (inErr).
func (l Limits) point(pt *yaml.Node, file string, fp fingerprinter) (cfg *Config, in Inputs, err, inErr error) {
	src := &Source{File: file, lines: map[string]int{}}
	cfg, err = l.build(pt, src)
	if err != nil {
		return nil, nil, err, nil
	}
	in, inErr = fp.inputs(cfg, Options{BaseDir: filepath.Dir(file), Data: l.Data})
	return cfg, in, nil, inErr
}

// Shard returns the points of shard i of n (0 ≤ i < n): every point whose
// index is i modulo n. The shards of a grid are disjoint and cover it.
func (g *Grid) Shard(i, n int) ([]Point, error) {
	if n < 1 || i < 0 || i >= n {
		return nil, fmt.Errorf("experiments: shard %d/%d: want 0 <= i < n", i, n)
	}
	var out []Point
	for _, p := range g.Points {
		if p.Index%n == i {
			out = append(out, p)
		}
	}
	return out, nil
}

// ParseShard parses "i/n" (0-based i, as in a Slurm array task ID or a
// Kubernetes job completion index): exactly two decimal integers, nothing
// else, with 0 ≤ i < n.
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok && decimal(a) && decimal(b) {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
		if err == nil && n >= 1 && i < n {
			return i, n, nil
		}
	}
	return 0, 0, fmt.Errorf("shard %q: want i/n, two decimal integers with 0 <= i < n (for example 0/4)", s)
}

// decimal reports whether s is a non-empty run of ASCII digits.
func decimal(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// overlap returns a varied path that is a section of path or inside it ("" if
// none).
func overlap(seen map[string]bool, path string) string {
	var hits []string
	for q := range seen {
		if strings.HasPrefix(path, q+".") || strings.HasPrefix(q, path+".") {
			hits = append(hits, q)
		}
	}
	slices.Sort(hits)
	if len(hits) == 0 {
		return ""
	}
	return hits[0]
}

// checkPath returns why the dotted path names no configuration key ("" when
// it does).
func checkPath(path string) string {
	t := reflect.TypeOf(Config{})
	parts := strings.Split(path, ".")
	for i, p := range parts {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return fmt.Sprintf("%s is a value, not a section: it has no key %q", strings.Join(parts[:i], "."), p)
		}
		fields := yamlFields(t)
		f, ok := fields[p]
		if !ok {
			f.Type, ok = ownKeyType(t, p)
		}
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			slices.Sort(known)
			where := "at the top level"
			if i > 0 {
				where = "under " + strings.Join(parts[:i], ".")
			}
			return fmt.Sprintf("unknown key %q %s (known keys there: %s)", p, where, strings.Join(known, ", "))
		}
		t = f.Type
	}
	return ""
}

// setPath sets the dotted path in the mapping m to v, creating mappings as
// needed; created keys carry the grid key's line.
func setPath(m *yaml.Node, path string, key, v *yaml.Node) {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		var next *yaml.Node
		if m.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(m.Content); j += 2 {
				if m.Content[j].Value == p {
					next = m.Content[j+1]
					if i == len(parts)-1 {
						m.Content[j+1] = v
						return
					}
					break
				}
			}
		}
		if m.Kind != yaml.MappingNode {
			// A scalar where a mapping is needed: replace it, the decoder
			// will then report the key path as unknown or mistyped.
			*m = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: key.Line}
		}
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p, Line: key.Line, Column: key.Column}
		if i == len(parts)-1 {
			m.Content = append(m.Content, k, v)
			return
		}
		if next == nil {
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: key.Line}
			m.Content = append(m.Content, k, next)
		} else if next.Kind != yaml.MappingNode {
			*next = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: key.Line}
		}
		m = next
	}
}

// deepCopy copies a node tree (aliases are resolved to copies) in a form
// that yaml.Marshal writes back faithfully.
func deepCopy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return deepCopy(n.Alias)
	}
	c := *n
	c.Anchor = "" // aliases are resolved: the copy's anchors name nothing
	if c.Kind == yaml.ScalarNode && c.Value == "" && c.ShortTag() == "!!null" {
		// yaml.v3 would write an empty null inside a flow list as '', an
		// empty string.
		c.Value, c.Style = "null", 0
	}
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = deepCopy(x)
	}
	return &c
}

// nodeString renders a value compactly: scalars as written, collections in
// flow style.
func nodeString(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	c := deepCopy(n)
	var setFlow func(*yaml.Node)
	setFlow = func(x *yaml.Node) {
		x.Style = yaml.FlowStyle
		for _, y := range x.Content {
			setFlow(y)
		}
	}
	setFlow(c)
	b, err := yaml.Marshal(c)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
