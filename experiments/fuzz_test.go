package experiments

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The fuzz targets of the configuration and grid decoders. go test runs
// their seed corpus (the example files and the refusals of strict_test.go);
// .ci/run fuzzes each for a bounded time, longer runs by hand:
//
//	go test ./experiments -run '^$' -fuzz '^FuzzLoad$' -fuzztime 10m
//	go test ./experiments -run '^$' -fuzz '^FuzzParseGrid$' -fuzztime 10m
//
// Properties: no panic; every rejection is a list of Problems of the file,
// each naming a key (a syntax error or a document-level problem names at
// least its line); every acceptance validates again, and a run
// configuration written out (as config.yaml is) loads back to the same run.
// (yaml.v3 does not always give the line of a syntax error: a file that is
// not valid YAML only needs its rejection to be Problems of the file.)

// slowInput is the time an input may take to decode before it is a failure
// (generous: the machine may be shared).
const slowInput = 5 * time.Second

// slowPoint is the further time a grid may take per point it expands to:
// ParseGrid builds, validates and hashes every point (1.2 ms a point on an
// idle 2-core machine for the 1,860 of centralized-mnist-paper-size.yaml,
// 3.8 ms with a grid and the fuzzer's two workers beside it, which took it
// past slowInput alone). What the bound is for, an input whose decoding
// grows faster than its points, still fails it.
const slowPoint = 10 * time.Millisecond

// fuzzSeeds adds the example configurations and the strict tests' cases.
func fuzzSeeds(f *testing.F) {
	files, _ := filepath.Glob("*.yaml")
	more, _ := filepath.Glob("paper/*.yaml")
	grids, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range append(append(files, more...), grids...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		validYAML,
		validYAML + "---\nrounds: 6\n",
		strings.Replace(validYAML, "rounds: 5", "rounds: 10.5", 1),
		strings.Replace(validYAML, "rounds: 5", "rounds: 1e3", 1),
		strings.Replace(validYAML, "seed: 3", "seed: 18446744073709551616", 1),
		strings.Replace(validYAML, "  lr: 0.1", "  lr: .nan", 1),
		strings.Replace(validYAML, "name: t", "name: ../../x", 1),
		strings.Replace(validYAML, "rounds: 5", "rounds: 5\nrounds: 6", 1),
		strings.Replace(validYAML, "model:\n  kind: logreg", "model: &m\n  kind: logreg\n  hidden: [*m]", 1),
		strings.Replace(validYAML, "rounds: 5", "rounds: 1000000000000", 1),
		strings.Replace(validYAML, "  kind: logreg\n", "  kind: mlp\n  hidden: &h [8, 8]\n", 1) + "grid:\n  model.hidden: [*h, [4]]\n",
		validYAML + "grid:\n  seed: [1, 2]\n  aggregator.kind: [dpfedavg, tree]\nzip:\n  - server.lr: [1, 2]\n    server.momentum: [0, 0.9]\n",
		validYAML + "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
		"", "[1, 2]", "a: [", "{}",
	} {
		f.Add([]byte(s))
	}
}

// parses reports whether data is one or more syntactically valid YAML
// documents.
func parses(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		switch err := dec.Decode(&n); {
		case errors.Is(err, io.EOF):
			return true
		case err != nil:
			return false
		}
	}
}

// checkRejection fails unless every leaf of err is a Problem of file naming a
// key, except document-level problems and syntax errors.
func checkRejection(t *testing.T, data []byte, err error, file string) {
	t.Helper()
	docLevel := []string{"empty ", "a second YAML document", "want a mapping"}
	for _, e := range leafErrors(err) {
		if strings.HasPrefix(e.Error(), "... and ") && strings.HasSuffix(e.Error(), " more problems of invalid points") {
			continue
		}
		p, ok := e.(Problem)
		if !ok {
			t.Fatalf("rejection is not a Problem: %T %v", e, e)
		}
		if p.File != file || strings.TrimSpace(p.Msg) == "" {
			t.Fatalf("problem without its file or message: %+v", p)
		}
		if p.Path != "" {
			continue
		}
		known := !parses(data)
		for _, d := range docLevel {
			known = known || strings.HasPrefix(p.Msg, d)
		}
		if !known {
			t.Fatalf("problem names no key: %v", p)
		}
	}
}

func FuzzLoad(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		cfg, src, err := Load(data, "f.yaml")
		if d := time.Since(start); d > slowInput {
			t.Fatalf("Load took %v", d)
		}
		if err != nil {
			checkRejection(t, data, err, "f.yaml")
			return
		}
		if err := cfg.Validate(src); err != nil {
			t.Fatalf("accepted, but does not validate again: %v", err)
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, _, err := Load(out, "config.yaml")
		if err != nil {
			t.Fatalf("accepted config written out is refused: %v\n%s", err, out)
		}
		if RunID(again, nil) != RunID(cfg, nil) {
			t.Fatalf("accepted config written out is another run:\n%s", out)
		}
	})
}

// gridPoints is the number of combinations of the grid file's axes (1 when
// it has none or cannot be read), without expanding them.
func gridPoints(data []byte) int {
	root, err := parseDocument(data, "g", "grid")
	if err != nil || root.Kind != yaml.MappingNode {
		return 1
	}
	deref := func(n *yaml.Node) *yaml.Node {
		if n.Kind == yaml.AliasNode {
			return n.Alias
		}
		return n
	}
	total := 1
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := deref(root.Content[i]), deref(root.Content[i+1])
		var lists []*yaml.Node
		switch k.Value {
		case "grid":
			for j := 1; j < len(v.Content); j += 2 {
				lists = append(lists, deref(v.Content[j]))
			}
		case "zip":
			for _, g := range v.Content {
				if g = deref(g); len(g.Content) > 1 {
					lists = append(lists, deref(g.Content[1]))
				}
			}
		}
		for _, l := range lists {
			total *= max(1, len(l.Content))
			if total > 1<<20 {
				return total
			}
		}
	}
	return total
}

func FuzzParseGrid(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		points := gridPoints(data)
		if points > 2000 {
			t.Skip("expands to many points: slow, not interesting") // ParseGrid refuses above 1,000,000
		}
		// ParseGrid fingerprints the files a point reads: keep the fuzzer
		// away from the file system (and from hashing every Debian
		// changelog on each input).
		for _, key := range []string{"dir", "path", "changelogs", "file", "debian"} {
			if bytes.Contains(data, []byte(key)) {
				t.Skip("names files")
			}
		}
		start := time.Now()
		g, err := ParseGrid(data, "g.yaml")
		if d := time.Since(start); d > slowInput+time.Duration(points)*slowPoint {
			t.Fatalf("ParseGrid took %v for %d points", d, points)
		}
		if err != nil {
			checkRejection(t, data, err, "g.yaml")
			return
		}
		if len(g.Points) == 0 || nameProblem(g.Name) != "" {
			t.Fatalf("accepted grid with %d points and name %q", len(g.Points), g.Name)
		}
		ids := map[string]bool{}
		for _, p := range g.Points {
			if err := p.Config.Validate(nil); err != nil {
				t.Fatalf("accepted point %d does not validate: %v", p.Index, err)
			}
			if ids[p.ID] || p.ID != RunID(p.Config, p.Inputs) || strings.ContainsAny(p.Dir(), `/\`) {
				t.Fatalf("point %d: id %s (duplicate %v), dir %q", p.Index, p.ID, ids[p.ID], p.Dir())
			}
			ids[p.ID] = true
		}
	})
}
