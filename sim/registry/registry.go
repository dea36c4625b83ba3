// Package registry is the one table of kinds the configuration sections
// share: a list of kinds known by name (and older spellings), kept in the
// order their Order gives, and the helpers of the YAML sections whose
// kinds own inlined structs of keys (which keys are set, which keys a
// struct has, a value that must be one of a list).
//
// A package keeps its kinds in a slice of its own (its public table) and
// reads and extends it through a Table.
package registry

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Problems receives the problems of a configuration section, each with its
// key relative to the section and its reason.
type Problems func(key, format string, args ...any)

// Table reads and extends the slice *List of kinds K.
type Table[K any] struct {
	List *[]K
	Name func(K) string // the kind's name
	// Aliases, if not nil, lists a kind's older spellings, which Lookup
	// also accepts.
	Aliases func(K) []string
	// Order, if not nil, places a kind registered later among the others:
	// the list is kept in increasing Order, kinds of equal Order in the
	// order they were registered. Nil: appended.
	Order func(K) int
}

// Register adds k to the list at its place; it panics on a name
// registered twice.
func (t Table[K]) Register(k K) {
	name := t.Name(k)
	if t.Index(name) >= 0 {
		panic(fmt.Sprintf("registry: %s registered twice", name))
	}
	l := *t.List
	i := len(l)
	if t.Order != nil {
		for i > 0 && t.Order(l[i-1]) > t.Order(k) {
			i--
		}
	}
	*t.List = slices.Insert(l, i, k)
}

// Index returns the position of the kind named name (by its name or one of
// its aliases), or -1.
func (t Table[K]) Index(name string) int {
	return slices.IndexFunc(*t.List, func(k K) bool {
		return t.Name(k) == name || t.Aliases != nil && slices.Contains(t.Aliases(k), name)
	})
}

// Lookup returns the kind named name (by its name or one of its aliases),
// or the zero K and false.
func (t Table[K]) Lookup(name string) (K, bool) {
	if i := t.Index(name); i >= 0 {
		return (*t.List)[i], true
	}
	var zero K
	return zero, false
}

// Names lists the names of the kinds keep selects (nil: all), in order.
func (t Table[K]) Names(keep func(K) bool) []string {
	var out []string
	for _, k := range *t.List {
		if keep == nil || keep(k) {
			out = append(out, t.Name(k))
		}
	}
	return out
}

// key is the YAML key of a struct field.
func key(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// SetKeys lists the YAML keys of the fields of the struct *v that are set
// (not zero; a list: not empty), in field order.
func SetKeys(v any) []string {
	rv := reflect.ValueOf(v).Elem()
	var keys []string
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Slice && f.Len() > 0 || f.Kind() != reflect.Slice && !f.IsZero() {
			keys = append(keys, key(rv.Type().Field(i)))
		}
	}
	return keys
}

// Keys lists the YAML keys of the fields of the struct *v, in field order.
func Keys(v any) []string {
	t := reflect.TypeOf(v).Elem()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = key(t.Field(i))
	}
	return keys
}

// OneOf adds a problem unless v is one of allowed.
func OneOf(add Problems, key, v string, allowed []string) {
	if v == "" {
		add(key, "required (one of %v)", allowed)
	} else if !slices.Contains(allowed, v) {
		add(key, "unknown value %q (want one of %v)", v, allowed)
	}
}
