package models

import (
	"fmt"
	"strings"
)

// Range is the half-open range [Lo, Hi) of the flat parameter vector.
type Range struct{ Lo, Hi int }

// Trainable is the part of a model's parameter vector that is trained when
// some tensors are frozen (the model section's key freeze): the trained
// tensors' ranges, in order. The server's update, the clipped sum and the
// noise cover only these coordinates (a vector of Len values, the trained
// tensors concatenated in order); frozen tensors keep their initial values.
type Trainable struct {
	Keep  []Range // trained ranges, increasing, not adjacent
	Total int     // the whole vector's length
	n     int
}

// NewTrainable returns the trainable part of a model with tensors ts when
// the tensors freeze names are frozen: each entry is a tensor's name, or a
// prefix of names ending before a dot ("layers.0" freezes layers.0.weight
// and layers.0.bias; "layers.2.layers" a residual block's sub-list). It
// returns nil when nothing is frozen. An entry that names no tensor, or a
// list that freezes every tensor, is an error naming the key (freeze[i]).
func NewTrainable(ts []Tensor, freeze []string) (*Trainable, error) {
	if len(freeze) == 0 {
		return nil, nil
	}
	frozen := make([]bool, len(ts))
	for i, f := range freeze {
		hit := false
		for j, t := range ts {
			if f != "" && (t.Name == f || strings.HasPrefix(t.Name, f+".")) {
				frozen[j], hit = true, true
			}
		}
		if !hit {
			names := make([]string, len(ts))
			for j, t := range ts {
				names[j] = t.Name
			}
			return nil, fmt.Errorf("freeze[%d]: %q is no tensor's name or name prefix (the model's tensors: %s)", i, f, strings.Join(names, ", "))
		}
	}
	tr := &Trainable{}
	for j, t := range ts {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		lo, hi := t.Offset, t.Offset+n
		tr.Total = max(tr.Total, hi)
		if frozen[j] || n == 0 {
			continue
		}
		if k := len(tr.Keep); k > 0 && tr.Keep[k-1].Hi == lo {
			tr.Keep[k-1].Hi = hi
		} else {
			tr.Keep = append(tr.Keep, Range{lo, hi})
		}
		tr.n += n
	}
	if tr.n == 0 {
		return nil, fmt.Errorf("freeze: every tensor is frozen, nothing is left to train")
	}
	return tr, nil
}

// Len is the number of trained parameters.
func (t *Trainable) Len() int { return t.n }

// Frozen returns the frozen ranges, in order.
func (t *Trainable) Frozen() []Range {
	var out []Range
	at := 0
	for _, r := range t.Keep {
		if r.Lo > at {
			out = append(out, Range{at, r.Lo})
		}
		at = r.Hi
	}
	if at < t.Total {
		out = append(out, Range{at, t.Total})
	}
	return out
}

// Gather copies the trained coordinates of full (Total values) into dst
// (Len values), in order.
func (t *Trainable) Gather(dst, full []float32) {
	at := 0
	for _, r := range t.Keep {
		at += copy(dst[at:], full[r.Lo:r.Hi])
	}
}

// Scatter copies src (Len values) into the trained coordinates of full,
// leaving the frozen ones as they are.
func (t *Trainable) Scatter(full, src []float32) {
	at := 0
	for _, r := range t.Keep {
		at += copy(full[r.Lo:r.Hi], src[at:])
	}
}
