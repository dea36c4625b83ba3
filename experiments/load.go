package experiments

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// build decodes the configuration root (with key lines recorded in src),
// normalizes and validates it, and reports every problem at once: those of
// decoding (unknown keys, bad values) together with those of validation,
// which sees the rest of the configuration with the bad values left out
// (a validation problem about a key whose value was bad, or about a
// section holding it, is not reported twice).
func (l Limits) build(root *yaml.Node, src *Source) (*Config, error) {
	cfg := new(Config)
	d := decodeLenient(root, src, cfg)
	if d.whole {
		return nil, errors.Join(d.problems...)
	}
	zeros := writtenZeros(cfg, src)
	cfg.Normalize()
	problems := d.problems
	var restored []string
	for _, z := range zeros {
		if !z.v.IsZero() && !hidden(z.path, d.badPaths) { // (a bad value was left out, not written as 0)
			// A default replaced a value written as 0: keep what was
			// written, for validation to judge.
			z.v.SetZero()
			restored = append(restored, z.path)
		}
	}
	verr := l.Validate(cfg, src)
	reported := map[string]bool{}
	for _, e := range flatten(verr) {
		var p Problem
		if errors.As(e, &p) {
			reported[p.Path] = true
			if hidden(p.Path, d.badPaths) {
				continue
			}
		}
		problems = append(problems, e)
	}
	for _, path := range restored {
		if !reported[path] {
			problems = append(problems, src.problem(path, "0 is not a usable value here: give a positive value, or leave the key out for its default"))
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return cfg, nil
}

// hidden reports whether a validation problem at path may follow from a
// bad value at one of bad (left out, so its default stood in): at that
// key, inside it, at a section holding it, or at another key of its
// section (a kind's value decides what its siblings mean).
func hidden(path string, bad []string) bool {
	if path == "" {
		return false
	}
	for _, b := range bad {
		sec := parentPath(b)
		if path == b || within(path, b) || within(b, path) || sec != "" && within(path, sec) {
			return true
		}
	}
	return false
}

// within reports whether the key path p lies inside the key path sec.
func within(p, sec string) bool {
	return strings.HasPrefix(p, sec) && len(p) > len(sec) && (p[len(sec)] == '.' || p[len(sec)] == '[')
}

// flatten lists the errors errors.Join combined into err (err itself when
// it is not a join).
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// zeroField is a number field of a configuration that was written as 0.
type zeroField struct {
	path string
	v    reflect.Value
}

// writtenZeros lists the number fields of cfg that the file wrote as 0 (a
// key present with the value 0), so that a default filled in later does
// not silently replace them.
func writtenZeros(cfg *Config, src *Source) []zeroField {
	var out []zeroField
	var visit func(v reflect.Value, path string)
	visit = func(v reflect.Value, path string) {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			fv := v.Field(i)
			if opts == "inline" && f.Type.Kind() == reflect.Struct {
				visit(fv, path)
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			p := joinPath(path, name)
			switch f.Type.Kind() {
			case reflect.Struct:
				visit(fv, p)
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				if src.Line(p) > 0 && fv.IsZero() {
					out = append(out, zeroField{p, fv})
				}
			}
		}
	}
	visit(reflect.ValueOf(cfg).Elem(), "")
	return out
}

// describePoints writes point numbers (1-based, ascending) as "3, 7-14".
func describePoints(ns []int) string {
	var b strings.Builder
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", ns[i], ns[j])
		} else {
			fmt.Fprintf(&b, "%d", ns[i])
		}
		i = j + 1
	}
	return b.String()
}
