package registry

import (
	"fmt"
	"slices"
	"testing"
)

type kind struct {
	name    string
	aliases []string
	order   int
}

// TestTable: kinds are kept by Order (equal Orders in registration order),
// found by name or alias, listed by a filter, and a name registered twice
// panics.
func TestTable(t *testing.T) {
	var list []kind
	tab := Table[kind]{List: &list, Name: func(k kind) string { return k.name },
		Aliases: func(k kind) []string { return k.aliases }, Order: func(k kind) int { return k.order }}
	for _, k := range []kind{{name: "c", order: 2}, {name: "a", order: 0, aliases: []string{"old-a"}}, {name: "d", order: 2}, {name: "b", order: 1}} {
		tab.Register(k)
	}
	if got := tab.Names(nil); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("Names = %v", got)
	}
	if got := tab.Names(func(k kind) bool { return k.order == 2 }); !slices.Equal(got, []string{"c", "d"}) {
		t.Errorf("filtered Names = %v", got)
	}
	if k, ok := tab.Lookup("old-a"); !ok || k.name != "a" {
		t.Errorf("Lookup(old-a) = %v, %v", k, ok)
	}
	if _, ok := tab.Lookup("e"); ok || tab.Index("e") != -1 {
		t.Error("found e")
	}
	defer func() {
		if p := recover(); fmt.Sprint(p) != "registry: b registered twice" {
			t.Errorf("panic %v", p)
		}
	}()
	tab.Register(kind{name: "b"})
}

// TestKeys: the YAML keys of a struct, those set (an empty list is not),
// and OneOf's two messages.
func TestKeys(t *testing.T) {
	v := struct {
		A int      `yaml:"a"`
		B []int    `yaml:"b,omitempty"`
		C *float64 `yaml:"c"`
		D string   `yaml:"d"`
	}{A: 1, B: []int{}, D: "x"}
	if got := Keys(&v); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("Keys = %v", got)
	}
	if got := SetKeys(&v); !slices.Equal(got, []string{"a", "d"}) {
		t.Errorf("SetKeys = %v", got)
	}
	var got []string
	add := func(key, format string, args ...any) { got = append(got, key+": "+fmt.Sprintf(format, args...)) }
	OneOf(add, "k", "", []string{"x", "y"})
	OneOf(add, "k", "z", []string{"x", "y"})
	OneOf(add, "k", "y", []string{"x", "y"})
	want := []string{"k: required (one of [x y])", `k: unknown value "z" (want one of [x y])`}
	if !slices.Equal(got, want) {
		t.Errorf("OneOf: %q, want %q", got, want)
	}
}
