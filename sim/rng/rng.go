// Package rng derives every random stream of a dpfl run from one root seed.
//
// A stream is named by a label and a list of indices, for example
// ("init"), ("partition"), ("avail", client), ("sched", round),
// ("client", round, id) or ("noise", j). Its generator is ChaCha8 (math/rand/v2)
// keyed by SHA-256(root seed, label, indices), so
//
//   - two streams with different names are independent for all practical
//     purposes, and adding a stream never shifts another one;
//   - a stream's values depend only on its name, never on which goroutine asks,
//     in which order, or what was drawn before; results therefore do not depend
//     on the worker count, and a run can resume mid-way by re-deriving streams;
//   - noise vector j can be regenerated at any time from ("noise", j).
//
// Library code never uses the global math/rand source or the clock; it takes a
// *rand.Rand or a Root from its caller.
//
// Package rng imports only the standard library; every dpfl package may import it.
package rng

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
)

// Root is the root seed of a run. The zero value is a valid seed.
type Root struct {
	seed uint64
}

// New returns the root of all streams of a run seeded with seed.
func New(seed uint64) Root { return Root{seed: seed} }

// Seed reports the root seed.
func (r Root) Seed() uint64 { return r.seed }

// Key returns the 32-byte ChaCha8 key of the stream named (label, idx...).
func (r Root) Key(label string, idx ...uint64) [32]byte {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], r.seed)
	h.Write([]byte("dpfl/rng/v1\x00"))
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], uint64(len(label)))
	h.Write(b[:])
	h.Write([]byte(label))
	for _, i := range idx {
		binary.LittleEndian.PutUint64(b[:], i)
		h.Write(b[:])
	}
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return key
}

// Stream returns a fresh generator for the stream named (label, idx...).
// Calling Stream twice with the same name gives two generators that produce the
// same sequence.
func (r Root) Stream(label string, idx ...uint64) *rand.Rand {
	return rand.New(rand.NewChaCha8(r.Key(label, idx...)))
}

// Sub returns a new root derived from the stream named (label, idx...). It lets
// a component hand a whole family of streams to a sub-component (for example
// one root per grid point) without the two families ever colliding.
func (r Root) Sub(label string, idx ...uint64) Root {
	k := r.Key(label, idx...)
	return Root{seed: binary.LittleEndian.Uint64(k[:8])}
}

// FillNormal fills dst with independent standard normal values drawn from src.
func FillNormal(dst []float64, src *rand.Rand) {
	for i := range dst {
		dst[i] = src.NormFloat64()
	}
}

// FillNormal32 fills dst with independent standard normal values drawn from
// src, rounded to float32.
func FillNormal32(dst []float32, src *rand.Rand) {
	for i := range dst {
		dst[i] = float32(src.NormFloat64())
	}
}
