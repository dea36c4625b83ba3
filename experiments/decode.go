package experiments

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
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
// path. Every problem found is reported at once (errors.Join of Problems).
func LoadFile(path string) (*Config, *Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("experiments: %w", err)
	}
	return Load(data, path)
}

// Load is LoadFile on bytes; file names the source in messages.
func Load(data []byte, file string) (*Config, *Source, error) {
	var cfg Config
	src, err := Decode(data, file, &cfg)
	if err != nil {
		return nil, src, err
	}
	cfg.Normalize()
	if err := cfg.Validate(src); err != nil {
		return nil, src, err
	}
	return &cfg, src, nil
}

// Decode strictly decodes one YAML document into dst (a pointer to a struct
// whose fields carry yaml tags). Unknown keys, values of the wrong type and
// syntax errors are all reported, each with its line.
func Decode(data []byte, file string, dst any) (*Source, error) {
	src := &Source{File: file, lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return src, Problem{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return src, Problem{File: file, Msg: "empty configuration"}
	}
	return src, decodeNode(doc.Content[0], src, dst)
}

// decodeNode strictly decodes the mapping root into dst, recording key
// lines in src.
func decodeNode(root *yaml.Node, src *Source, dst any) error {
	var problems []error
	walk(root, reflect.TypeOf(dst).Elem(), "", src, &problems)
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	b, err := yaml.Marshal(root)
	if err == nil {
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		err = dec.Decode(dst)
	}
	if err != nil { // should not happen after walk
		return Problem{File: src.File, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return nil
}

// walk checks node n against type t, recording key lines and problems.
func walk(n *yaml.Node, t reflect.Type, path string, src *Source, problems *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an explicit null leaves the default
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			*problems = append(*problems, Problem{File: src.File, Line: n.Line, Path: path, Msg: "want a mapping of keys to values"})
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			f, ok := fields[k.Value]
			if !ok {
				known := make([]string, 0, len(fields))
				for name := range fields {
					known = append(known, name)
				}
				slices.Sort(known)
				*problems = append(*problems, Problem{File: src.File, Line: k.Line, Path: p,
					Msg: fmt.Sprintf("unknown key %q (known keys here: %s)", k.Value, strings.Join(known, ", "))})
				continue
			}
			src.lines[p] = k.Line
			walk(v, f.Type, p, src, problems)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			*problems = append(*problems, Problem{File: src.File, Line: n.Line, Path: path, Msg: "want a list"})
			return
		}
		for i, e := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			src.lines[p] = e.Line
			walk(e, t.Elem(), p, src, problems)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			*problems = append(*problems, Problem{File: src.File, Line: n.Line, Path: path, Msg: "want a mapping"})
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := joinPath(path, n.Content[i].Value)
			src.lines[p] = n.Content[i].Line
			walk(n.Content[i+1], t.Elem(), p, src, problems)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			*problems = append(*problems, Problem{File: src.File, Line: n.Line, Path: path, Msg: "want " + typeName(t) + ", got a " + kindName(n.Kind)})
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			*problems = append(*problems, Problem{File: src.File, Line: n.Line, Path: path, Msg: fmt.Sprintf("cannot use %q as %s", n.Value, typeName(t))})
		}
	}
}

// yamlFields maps yaml key names to the struct's fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

func joinPath(path, key string) string {
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
