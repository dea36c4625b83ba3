package experiments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"dpfl/results/regular"
)

// Problem is one thing wrong with a configuration, located by its dotted key
// path and, when known, its file and line.
type Problem struct {
	File string
	Line int
	Path string
	Msg  string
}

func (p Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Source remembers where each key of a decoded configuration was written.
type Source struct {
	File  string
	lines map[string]int
}

// Line returns the line of the key at path (0 if not written).
func (s *Source) Line(path string) int {
	if s == nil {
		return 0
	}
	return s.lines[path]
}

// problem returns a Problem at path, located when the key was written.
func (s *Source) problem(path, format string, args ...any) Problem {
	p := Problem{Path: path, Msg: fmt.Sprintf(format, args...)}
	if s != nil {
		p.File = s.File
		// A missing key is reported at its closest written parent.
		for q := path; q != ""; q = parentPath(q) {
			if l := s.lines[q]; l > 0 {
				p.Line = l
				break
			}
		}
	}
	return p
}

func parentPath(p string) string {
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return ""
}

// LoadFile reads, strictly decodes, normalizes and validates the config in
// path, with the default Limits. Every problem found is reported at once
// (errors.Join of Problems).
func LoadFile(path string) (*Config, *Source, error) { return Limits{}.LoadFile(path) }

// Load is LoadFile on bytes; file names the source in messages.
func Load(data []byte, file string) (*Config, *Source, error) { return Limits{}.Load(data, file) }

// maxConfigBytes bounds a configuration or grid file: one larger is refused
// before it is read (a device such as /dev/zero, or a FIFO, is refused
// without blocking: package regular).
const maxConfigBytes = 16 << 20

// LoadFile is the package's LoadFile with the memory estimate held to l.
func (l Limits) LoadFile(path string) (*Config, *Source, error) {
	data, err := regular.ReadMax(path, maxConfigBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("experiments: %w", err)
	}
	return l.Load(data, path)
}

// Load is the package's Load with the memory estimate held to l.
func (l Limits) Load(data []byte, file string) (*Config, *Source, error) {
	src := &Source{File: file, lines: map[string]int{}}
	root, err := parseDocument(data, file, "configuration")
	if err != nil {
		return nil, src, err
	}
	cfg, err := l.build(root, src)
	if err != nil {
		return nil, src, err
	}
	return cfg, src, nil
}

// Decode strictly decodes one YAML document into dst (a pointer to a struct
// whose fields carry yaml tags). Unknown keys, keys given twice, values of the
// wrong type, non-finite numbers, non-integers where an integer is meant,
// integers out of range, a second document and syntax errors are all
// reported, each with its line; the keys without problems are still
// decoded into dst.
func Decode(data []byte, file string, dst any) (*Source, error) {
	src := &Source{File: file, lines: map[string]int{}}
	root, err := parseDocument(data, file, "configuration")
	if err != nil {
		return src, err
	}
	return src, decodeNode(root, src, dst)
}

// MaxNodes bounds the size of a configuration or grid file's YAML tree,
// aliases counted at every use: a file that expands to more nodes is
// refused before anything walks or copies it (a few hundred bytes of nested
// aliases can otherwise expand to billions of nodes).
const MaxNodes = 100_000

// parseDocument parses data as exactly one YAML document and returns its root
// node, after checking that the tree, aliases expanded, has at most MaxNodes
// nodes and no alias inside its own anchor. what names the file's kind in
// messages.
func parseDocument(data []byte, file, what string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) || (err == nil && len(doc.Content) == 0) {
		return nil, Problem{File: file, Msg: "empty " + what}
	}
	if err != nil {
		return nil, syntaxProblem(file, data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxProblem(file, data, err)
	default:
		return nil, Problem{File: file, Line: extra.Line, Msg: fmt.Sprintf("a second YAML document (after a '---' line): a %s file holds exactly one", what)}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, Problem{File: file, Line: root.Line, Msg: "empty " + what}
	}
	if err := checkSize(root, file); err != nil {
		return nil, err
	}
	return root, nil
}

// syntaxProblem turns a yaml.v3 parse error into a Problem with its line
// (the last line of data for an unexpected end).
func syntaxProblem(file string, data []byte, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	p := Problem{File: file, Msg: msg}
	// yaml.v3 writes "line N: message".
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(num); err == nil && l > 0 {
				p.Line, p.Msg = l, text
			}
		}
	}
	if p.Line == 0 && strings.Contains(msg, "end of stream") {
		p.Line = 1 + bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))
	}
	return p
}

// checkSize walks the tree under root once, memoizing the expanded size of
// every node (so the walk is linear in the file, whatever the aliases
// expand to), and reports the first node whose expansion exceeds MaxNodes,
// or an alias used inside its own anchor, naming its key path and line.
func checkSize(root *yaml.Node, file string) error {
	const inProgress = -1
	memo := map[*yaml.Node]int{}
	var visit func(n *yaml.Node, path string) (int, error)
	visit = func(n *yaml.Node, path string) (int, error) {
		if n == nil {
			return 0, nil
		}
		if s, ok := memo[n]; ok {
			if s == inProgress {
				return 0, Problem{File: file, Line: n.Line, Path: path, Msg: "an alias refers to a value that contains it (a recursive alias)"}
			}
			return s, nil
		}
		memo[n] = inProgress
		total := 1
		add := func(child *yaml.Node, p string) error {
			s, err := visit(child, p)
			if err != nil {
				return err
			}
			if total += s; total > MaxNodes {
				what := "this value"
				if n.Kind == yaml.AliasNode {
					what = "alias *" + n.Value
				}
				return Problem{File: file, Line: n.Line, Path: path,
					Msg: fmt.Sprintf("%s expands to more than %d YAML nodes (aliases count at every use): write the file out instead", what, MaxNodes)}
			}
			return nil
		}
		if n.Kind == yaml.AliasNode {
			if err := add(n.Alias, path); err != nil {
				return 0, err
			}
		}
		for i, c := range n.Content {
			p := path
			switch n.Kind {
			case yaml.MappingNode:
				if i%2 == 1 {
					p = joinPath(path, n.Content[i-1].Value)
				}
			case yaml.SequenceNode:
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			if err := add(c, p); err != nil {
				return 0, err
			}
		}
		memo[n] = total
		return total, nil
	}
	_, err := visit(root, "")
	return err
}

// decodeNode strictly decodes the mapping root into dst, recording key
// lines in src.
func decodeNode(root *yaml.Node, src *Source, dst any) error {
	return errors.Join(decodeLenient(root, src, dst).problems...)
}

// decoded is what decodeLenient found: the problems, and the paths of the
// values it left out because they were bad (an unknown key's path is not
// among them: leaving it out changes no value).
type decoded struct {
	problems []error
	badPaths []string
	whole    bool // the root itself is bad: nothing was decoded
}

// decodeLenient decodes the mapping root into dst like decodeNode, but
// when some keys or values are bad it still decodes the others (the bad
// ones are left out, so their fields keep their defaults), so that the
// rest of the configuration can be validated and every problem reported at
// once.
func decodeLenient(root *yaml.Node, src *Source, dst any) decoded {
	var d decoded
	if root.Kind == yaml.AliasNode {
		root = root.Alias
	}
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return d // nothing set: the defaults
	}
	w := walker{src: src, drop: map[*yaml.Node]bool{}}
	if !w.walk(root, reflect.TypeOf(dst).Elem(), "") {
		d.problems, d.whole = w.problems, true
		return d
	}
	d.problems, d.badPaths = w.problems, w.badPaths
	// Re-encode a copy with the aliases resolved, no anchors and the bad
	// entries left out: yaml.v3 writes an anchored empty null as &a '' (an
	// empty string).
	b, err := yaml.Marshal(w.prunedCopy(root))
	if err == nil {
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		err = dec.Decode(dst)
	}
	if err != nil { // should not happen after walk
		if len(d.problems) == 0 {
			d.problems = append(d.problems, Problem{File: src.File, Line: root.Line, Msg: strings.TrimPrefix(err.Error(), "yaml: ")})
		}
		d.whole = true
	}
	return d
}

// walker checks a node tree against a type, recording key lines, the
// problems, and the mapping entries to drop.
type walker struct {
	src      *Source
	problems []error
	badPaths []string
	drop     map[*yaml.Node]bool // key nodes of mapping entries to leave out
}

// prunedCopy is deepCopy of n without the entries whose key is in w.drop.
func (w *walker) prunedCopy(n *yaml.Node) *yaml.Node {
	c := deepCopy(n)
	var prune func(orig, cp *yaml.Node)
	prune = func(orig, cp *yaml.Node) {
		if orig.Kind == yaml.AliasNode {
			orig = orig.Alias
		}
		if orig.Kind != cp.Kind || len(orig.Content) != len(cp.Content) {
			return
		}
		if orig.Kind == yaml.MappingNode {
			kept := cp.Content[:0]
			for i := 0; i+1 < len(orig.Content); i += 2 {
				if w.drop[orig.Content[i]] {
					continue
				}
				prune(orig.Content[i+1], cp.Content[i+1])
				kept = append(kept, cp.Content[i], cp.Content[i+1])
			}
			cp.Content = kept
			return
		}
		for i := range orig.Content {
			prune(orig.Content[i], cp.Content[i])
		}
	}
	prune(n, c)
	return c
}

// walk checks node n against type t; it reports whether n is usable (a
// mapping with bad entries is: they are dropped).
func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) bool {
	src := w.src
	bad := func(n *yaml.Node, path, format string, args ...any) {
		w.problems = append(w.problems, Problem{File: src.File, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return true // an explicit null leaves the default
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad(n, path, "want a mapping of keys to values")
			return false
		}
		var fields map[string]reflect.StructField
		if t.Kind() == reflect.Struct {
			fields = yamlFields(t)
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				bad(k, joinPath(path, nodeString(k)), "want a key name, got a %s", kindName(k.Kind))
				w.drop[n.Content[i]] = true
				continue
			}
			p := joinPath(path, k.Value)
			if first, dup := seen[k.Value]; dup {
				bad(k, p, "given twice (first at line %d)", first)
				w.drop[n.Content[i]] = true
				w.badPaths = append(w.badPaths, p)
				continue
			}
			seen[k.Value] = k.Line
			elem := t
			if fields != nil {
				f, ok := fields[k.Value]
				if !ok {
					f.Type, ok = ownKeyType(t, k.Value)
				}
				if !ok {
					known := make([]string, 0, len(fields))
					for name := range fields {
						known = append(known, name)
					}
					slices.Sort(known)
					bad(k, p, "unknown key %q (known keys here: %s)", k.Value, strings.Join(known, ", "))
					w.drop[n.Content[i]] = true
					continue
				}
				elem = f.Type
			} else {
				elem = t.Elem()
			}
			src.lines[p] = k.Line
			if !w.walk(v, elem, p) {
				w.drop[n.Content[i]] = true
				w.badPaths = append(w.badPaths, p)
			}
		}
		return true
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad(n, path, "want a list")
			return false
		}
		ok := true
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			src.lines[p] = e.Line
			ok = w.walk(e, t.Elem(), p) && ok
		}
		return ok
	default:
		if n.Kind != yaml.ScalarNode {
			bad(n, path, "want %s, got a %s", typeName(t), kindName(n.Kind))
			return false
		}
		if msg := scalarProblem(n, t); msg != "" {
			bad(n, path, "%s", msg)
			return false
		}
		return true
	}
}

// scalarProblem returns why the scalar n cannot be a value of type t ("" when
// it can). Numbers are strict: an integer field takes only an integer
// literal (10, -3, 1_000, 0x1F; not 10.5, 1e3 or 10.0) within the type's
// range, and a number field only a finite number (not .nan or .inf).
func scalarProblem(n *yaml.Node, t reflect.Type) string {
	v := reflect.New(t)
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		lo, hi := intRange(t)
		switch n.ShortTag() {
		case "!!int":
			if n.Decode(v.Interface()) != nil {
				return fmt.Sprintf("%s is out of range (want an integer from %s to %s)", n.Value, lo, hi)
			}
			return ""
		case "!!float":
			if isDigits(n.Value) {
				return fmt.Sprintf("%s is out of range (want an integer from %s to %s)", n.Value, lo, hi)
			}
			f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if err == nil && f == math.Trunc(f) && math.Abs(f) < 1e18 {
				return fmt.Sprintf("%s is not an integer literal (write %.0f)", n.Value, f)
			}
			return fmt.Sprintf("%s is not an integer", n.Value)
		}
	case reflect.Float32, reflect.Float64:
		if n.Decode(v.Interface()) != nil {
			break
		}
		if f := v.Elem().Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%s is not a finite number", n.Value)
		}
		return ""
	}
	if n.Decode(v.Interface()) != nil {
		return fmt.Sprintf("cannot use %q as %s", n.Value, typeName(t))
	}
	return ""
}

// isDigits reports whether s is an optionally signed run of decimal digits
// (underscores allowed, as YAML does).
func isDigits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// intRange returns the smallest and largest values of the integer type t.
func intRange(t reflect.Type) (lo, hi string) {
	bits := t.Bits()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		return "0", strconv.FormatUint(math.MaxUint64>>(64-bits), 10)
	}
	return strconv.FormatInt(math.MinInt64>>(64-bits), 10), strconv.FormatInt(math.MaxInt64>>(64-bits), 10)
}

// yamlFields maps yaml key names to the struct's fields, those of inlined
// structs (`yaml:",inline"`) included.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			for k, g := range yamlFields(f.Type) {
				out[k] = g
			}
			continue
		}
		if opts == "inline" { // a map of keys registered at run time (ownKeyer)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

// ownKeyer is a section whose struct also takes keys registered at run
// time, in an inlined map (datasets.Config: the own keys of datasets
// registered from other packages): OwnKeyType is the type of such a key's
// value, false when none is registered.
type ownKeyer interface {
	OwnKeyType(key string) (reflect.Type, bool)
}

// ownKeyType is the type of the registered key of the section of struct
// type t, and false when t takes none or none is registered.
func ownKeyType(t reflect.Type, key string) (reflect.Type, bool) {
	if o, ok := reflect.New(t).Elem().Interface().(ownKeyer); ok {
		return o.OwnKeyType(key)
	}
	return nil, false
}

func joinPath(path, key string) string {
	if key == "" {
		key = `""` // an empty key, named visibly
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	default:
		return "a " + t.Kind().String()
	}
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	default:
		return "scalar"
	}
}
