// Package extension holds the tests that add kinds from outside the
// packages that own them, as a contributor adds one: each test file
// defines its kind, registers it in its init function, and runs it through
// the public configuration path. It has no code of its own; its kinds are
// registered only in its own test binary.
package extension
