package experiments

import (
	"fmt"
	"strings"

	"dpfl/participation"
	"dpfl/sim/registry"
	"dpfl/sim/rng"
)

// AvailabilityKind is one kind of participation.availability: when clients
// can take part. Each kind registers itself (RegisterAvailability) with its
// defaults, its validation and how its participation.Availability is built;
// the rest of experiments reads these, never the kind's name.
type AvailabilityKind struct {
	Name string
	// Everyone: every client is available in every round, so a cohort or
	// a sample is drawn from the whole population (Poisson sampling and
	// sampling without replacement are accounted only then).
	Everyone bool
	// ReadsFile: the kind reads participation.availability.file (resolved
	// against the config's folder; an input of the run). The key is
	// refused for the other kinds.
	ReadsFile bool
	// Defaults, if not nil, fills the kind's unset keys.
	Defaults func(a *AvailabilityConfig)
	// Validate, if not nil, reports the kind's problems (keys relative to
	// participation.availability).
	Validate func(a *AvailabilityConfig, add registry.Problems)
	// Build returns the availability of a population of numClients, its
	// randomness from streams of root; baseDir is the config's folder.
	Build func(a AvailabilityConfig, numClients int, root rng.Root, baseDir string) (participation.Availability, error)
	// NoneAvailable, if not nil, says why no client was available in any
	// round, for the error of a run in which no client took part.
	NoneAvailable func(c *Config) string
}

var (
	availabilityKinds []AvailabilityKind
	availabilityTable = registry.Table[AvailabilityKind]{List: &availabilityKinds, Name: func(k AvailabilityKind) string { return k.Name }}
)

// RegisterAvailability adds an availability kind after the others; it
// panics on a name registered twice or a kind without Build.
func RegisterAvailability(k AvailabilityKind) {
	if k.Build == nil {
		panic(fmt.Sprintf("experiments: availability %q needs Build", k.Name))
	}
	availabilityTable.Register(k)
	Availabilities = availabilityTable.Names(nil)
}

// lookupAvailability returns the kind named name ("" is the default,
// always).
func lookupAvailability(name string) (AvailabilityKind, bool) {
	if name == "" {
		name = defaultAvailability
	}
	return availabilityTable.Lookup(name)
}

// defaultAvailability is participation.availability.kind when unset.
const defaultAvailability = "always"

// everyoneAvailable reports whether the availability kind a makes every
// client available in every round (an unknown kind does not).
func everyoneAvailable(a AvailabilityConfig) bool {
	k, ok := lookupAvailability(a.Kind)
	return ok && k.Everyone
}

// readsFile reports whether the availability kind a reads
// participation.availability.file.
func readsFile(a AvailabilityConfig) bool {
	k, ok := lookupAvailability(a.Kind)
	return ok && k.ReadsFile
}

func init() {
	RegisterAvailability(AvailabilityKind{Name: defaultAvailability, Everyone: true,
		Build: func(AvailabilityConfig, int, rng.Root, string) (participation.Availability, error) {
			return participation.Always{}, nil
		}})
	RegisterAvailability(AvailabilityKind{Name: "diurnal", Defaults: diurnalDefaults,
		Validate: func(a *AvailabilityConfig, add registry.Problems) {
			if err := a.diurnalSpec().Validate(); err != nil {
				add("", "%s", strings.TrimPrefix(err.Error(), "participation: "))
			}
		},
		Build: func(a AvailabilityConfig, numClients int, root rng.Root, _ string) (participation.Availability, error) {
			return participation.NewDiurnal(a.diurnalSpec(), numClients, root)
		}})
	RegisterAvailability(AvailabilityKind{Name: "trace", ReadsFile: true,
		Validate: func(a *AvailabilityConfig, add registry.Problems) {
			if a.File == "" {
				add("file", "required for a trace (a CSV of client,start,end in simulated seconds)")
			}
		},
		Build: buildTrace, NoneAvailable: noTraceInterval})
}

// diurnalDefaults are the diurnal kind's defaults: eligibility 0.8 at the
// peak hour and 0.05 twelve hours from it, in windows of 4 hours.
func diurnalDefaults(a *AvailabilityConfig) {
	if a.Peak == 0 && a.Trough == 0 {
		a.Peak, a.Trough = 0.8, 0.05
	}
	if a.WindowHours == 0 {
		a.WindowHours = 4
	}
}

// buildTrace reads the trace file, whose client IDs must lie in the
// population.
func buildTrace(a AvailabilityConfig, numClients int, _ rng.Root, baseDir string) (participation.Availability, error) {
	t, err := participation.ReadTraceFile(resolve(baseDir, a.File))
	if err != nil {
		return nil, err
	}
	if m := t.MaxClient(); m >= numClients {
		return nil, fmt.Errorf("experiments: participation.availability.file names client %d, but the population has %d clients (IDs are 0..%d)", m, numClients, numClients-1)
	}
	return t, nil
}

// noTraceInterval says that no interval of the trace covers a round.
func noTraceInterval(c *Config) string {
	pc := c.Participation
	return fmt.Sprintf("participation.availability.file: no interval of %s covers a round's simulated time (%g h from UTC hour %g, %g min per round)",
		pc.Availability.File, float64(c.Rounds)*pc.Clock.RoundMinutes/60, pc.Clock.StartHour, pc.Clock.RoundMinutes)
}
