package privacy

import "fmt"

// Adjacency is a neighbouring relation: which pairs of datasets a guarantee
// is stated for. A noise multiplier is relative to the L2 sensitivity of the
// query under the relation in force, so the same noise is a different
// multiplier under different relations (a sum of vectors clipped to norm C
// has sensitivity C under add/remove and zero-out, 2C under replace-one).
type Adjacency uint8

const (
	// AnyAdjacency is an event that fixes no relation: a Gaussian or PureDP
	// event holds under whichever relation its sensitivity was computed
	// for. Guarantees of such events carry no label.
	AnyAdjacency Adjacency = iota
	// AddRemove: the datasets differ by one record present in one and
	// absent from the other (the relation of Poisson sampling).
	AddRemove
	// ReplaceOne: the datasets have the same size and differ in one record
	// (the relation of sampling a fixed-size subset without replacement;
	// the population size is public).
	ReplaceOne
	// ZeroOut: one record is replaced by a null record that contributes
	// nothing (a zero update); the population size and any data-independent
	// assignment of records to rounds or groups stay the same.
	ZeroOut
)

// String returns the relation's label: "add/remove", "replace-one",
// "zero-out", or "" for AnyAdjacency.
func (a Adjacency) String() string {
	switch a {
	case AnyAdjacency:
		return ""
	case AddRemove:
		return "add/remove"
	case ReplaceOne:
		return "replace-one"
	case ZeroOut:
		return "zero-out"
	}
	return fmt.Sprintf("Adjacency(%d)", int(a))
}

// Neighbouring states the relation under which Event's noise multipliers
// are sensitivity-normalized and its guarantee holds. Sampled events inside
// must be analysed under it: Poisson sampling under add/remove or zero-out
// (the sampled-Gaussian pair is the same for both: the record's
// contribution is present or not), sampling without replacement under
// replace-one only.
type Neighbouring struct {
	Relation Adjacency
	Event    Event
}

func (Neighbouring) isEvent() {}

// String implements Event.
func (n Neighbouring) String() string {
	return fmt.Sprintf("Neighbouring(%v, %v)", n.Relation, n.Event)
}

// AdjacencyOf returns the relation the valid-shaped event e is accounted
// under: the one a Neighbouring states, or else the one its sampling
// implies (add/remove for Poisson sampling, replace-one for sampling
// without replacement), or AnyAdjacency. It fails when e mixes relations
// (as dp_accounting's accountants refuse an event their
// neighboring_relation does not cover), e.g. a Poisson-sampled and a
// without-replacement event in one composition.
func AdjacencyOf(e Event) (Adjacency, error) { return relation(e, AnyAdjacency) }

// combineAdjacency returns the relation of two parts accounted together.
func combineAdjacency(a, b Adjacency) (Adjacency, error) {
	switch {
	case a == AnyAdjacency || a == b:
		return b, nil
	case b == AnyAdjacency:
		return a, nil
	}
	return a, fmt.Errorf("privacy: cannot account events under %v adjacency together with events under %v adjacency", b, a)
}

// relation is AdjacencyOf inside a Neighbouring stating outer.
func relation(e Event, outer Adjacency) (Adjacency, error) {
	switch e := e.(type) {
	case Neighbouring:
		if e.Relation < AddRemove || e.Relation > ZeroOut {
			return outer, fmt.Errorf("privacy: unknown neighbouring relation %d", int(e.Relation))
		}
		if outer != AnyAdjacency && outer != e.Relation {
			return outer, fmt.Errorf("privacy: %v adjacency stated inside %v adjacency", e.Relation, outer)
		}
		inner, err := relation(e.Event, e.Relation)
		if err != nil {
			return outer, err
		}
		return combineAdjacency(e.Relation, inner)
	case SelfComposed:
		return relation(e.Event, outer)
	case Composed:
		r := outer
		for _, x := range e.Events {
			xr, err := relation(x, outer)
			if err != nil {
				return outer, err
			}
			if r, err = combineAdjacency(r, xr); err != nil {
				return outer, err
			}
		}
		return r, nil
	case PoissonSampled:
		inner, err := relation(e.Event, outer)
		if err != nil || e.Probability == 0 || e.Probability == 1 {
			return inner, err
		}
		switch outer {
		case ReplaceOne:
			return outer, fmt.Errorf("privacy: %v: Poisson sampling is analysed under add/remove (or zero-out) adjacency, not replace-one", e)
		case AnyAdjacency:
			return combineAdjacency(AddRemove, inner)
		}
		return combineAdjacency(outer, inner)
	case SampledWithoutReplacement:
		inner, err := relation(e.Event, outer)
		if err != nil || e.SampleSize == 0 || e.SampleSize == e.PopulationSize {
			return inner, err
		}
		if outer != AnyAdjacency && outer != ReplaceOne {
			return outer, fmt.Errorf("privacy: %v: sampling without replacement is analysed under replace-one adjacency, not %v", e, outer)
		}
		return combineAdjacency(ReplaceOne, inner)
	}
	return outer, nil
}

// mergeAdjacency returns the relation of an accountant holding held after
// composing e, or why e cannot join it.
func mergeAdjacency(held Adjacency, e Event) (Adjacency, error) {
	r, err := AdjacencyOf(e)
	if err != nil {
		return held, err
	}
	return combineAdjacency(held, r)
}
