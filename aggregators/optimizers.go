package aggregators

import (
	"fmt"
	"slices"
	"strings"

	"dpfl/sim/registry"
)

// DefaultServerOptimizer is the server optimizer of a run configuration
// that names none.
const DefaultServerOptimizer = "sgd"

// ServerParams are the keys of a run configuration's server section that the
// server optimizers read, besides the learning-rate schedule. Unset keys
// are zero (nil for the β's).
type ServerParams struct {
	LR       float64
	Momentum float64
	Beta1    *float64
	Beta2    *float64
	Tau      float64
}

// ServerOptimizerKind is a server optimizer known by name: the value of a
// run configuration's server.optimizer. Each optimizer registers its kinds
// from its own file (RegisterServerOptimizer in an init function).
type ServerOptimizerKind struct {
	// Name is the server.optimizer value.
	Name string
	// Keys are the keys of ServerParams besides lr that it reads, among
	// "momentum", "beta1", "beta2" and "tau" (the YAML keys).
	Keys []string
	// Linear marks an optimizer whose trajectory is linear in the updates
	// (SGD with momentum): a factorization can be optimized for it
	// (aggregator.workload server).
	Linear bool
	// Defaults fills the unset keys of p (nil: none).
	Defaults func(p *ServerParams)
	// Validate reports the problems of p (given its defaults) through
	// problem, keys relative to the server section (nil: none). A key it
	// does not read (Keys) but p sets is refused by Check unless Validate
	// reported it; the learning rate and the momentum's range are checked
	// by the caller for every optimizer.
	Validate func(p ServerParams, problem Problems)
	// New builds the optimizer of a valid p with the learning-rate
	// schedule s.
	New func(p ServerParams, s LRSchedule) ServerOptimizer
}

var (
	serverOptimizers     []ServerOptimizerKind
	serverOptimizerTable = registry.Table[ServerOptimizerKind]{List: &serverOptimizers, Name: func(k ServerOptimizerKind) string { return k.Name }}
)

// RegisterServerOptimizer adds the kind k. It panics on an empty name, a
// missing New, a key outside ServerParams or a name already taken
// (programmer errors).
func RegisterServerOptimizer(k ServerOptimizerKind) {
	if k.Name == "" || k.New == nil {
		panic(fmt.Sprintf("aggregators: server optimizer %q needs a name and New", k.Name))
	}
	for _, key := range k.Keys {
		if !slices.Contains(serverKeys, key) {
			panic(fmt.Sprintf("aggregators: server optimizer %q reads unknown key %q", k.Name, key))
		}
	}
	serverOptimizerTable.Register(k)
}

// LookupServerOptimizer returns the kind called name.
func LookupServerOptimizer(name string) (ServerOptimizerKind, bool) {
	return serverOptimizerTable.Lookup(name)
}

// ServerOptimizerNames lists the server optimizers: the default first, then
// the others in the order they registered.
func ServerOptimizerNames() []string {
	return append([]string{DefaultServerOptimizer}, serverOptimizerTable.Names(func(k ServerOptimizerKind) bool { return k.Name != DefaultServerOptimizer })...)
}

// serverKeys are the keys of ServerParams besides lr.
var serverKeys = []string{"momentum", "beta1", "beta2", "tau"}

// Check reports the problems of p for k: those of k.Validate, then each key
// that p sets and k does not read (Keys), unless Validate reported it,
// naming the optimizers that read it.
func (k ServerOptimizerKind) Check(p ServerParams, problem Problems) {
	reported := map[string]bool{}
	if k.Validate != nil {
		k.Validate(p, func(key, format string, args ...any) {
			reported[key] = true
			problem(key, format, args...)
		})
	}
	var unused []string
	for _, key := range serverKeys {
		if !slices.Contains(k.Keys, key) && !reported[key] {
			unused = append(unused, key)
		}
	}
	refuseUnused(p, unused, problem)
}

// set reports whether the key of p named key is set.
func (p ServerParams) set(key string) bool {
	switch key {
	case "momentum":
		return p.Momentum != 0
	case "beta1":
		return p.Beta1 != nil
	case "beta2":
		return p.Beta2 != nil
	case "tau":
		return p.Tau != 0
	}
	return false
}

// refuseUnused reports each key among keys that p sets, naming the
// optimizers that read it.
func refuseUnused(p ServerParams, keys []string, problem Problems) {
	for _, key := range keys {
		if !p.set(key) {
			continue
		}
		users := serverOptimizerTable.Names(func(k ServerOptimizerKind) bool { return slices.Contains(k.Keys, key) })
		switch len(users) {
		case 0:
			problem(key, "no server.optimizer uses it")
		case 1:
			problem(key, "only server.optimizer %s uses it", users[0])
		default:
			problem(key, "only server.optimizer %s and %s use it", strings.Join(users[:len(users)-1], ", "), users[len(users)-1])
		}
	}
}
