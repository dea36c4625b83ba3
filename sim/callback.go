package sim

// Callback is told of a run's progress, on the loop's goroutine: recording,
// progress reports, audits' statistics and checkpoints are callbacks.
type Callback interface {
	// AfterRound is called after every completed round. state returns the
	// loop's state after it; the State's slices belong to the loop and
	// must be copied or written before AfterRound returns. An error ends
	// the run.
	AfterRound(rd Round, state func() State) error
	// Interrupted is called when the context ends a run that completed
	// rounds since it started (or resumed), with the state after the last
	// one (same ownership as in AfterRound).
	Interrupted(st State) error
}

// roundFunc is a function called after every round as a Callback.
type roundFunc func(Round)

func (f roundFunc) AfterRound(rd Round, _ func() State) error { f(rd); return nil }
func (f roundFunc) Interrupted(State) error                   { return nil }

// Checkpoints is the callback that saves the loop's state: after every
// Every-th round (0: never periodically) but the schedule's last, and when
// the run is interrupted after rounds not yet saved.
type Checkpoints struct {
	Every int
	Save  func(State) error
	saved int // rounds covered by the last save
}

// AfterRound implements Callback.
func (c *Checkpoints) AfterRound(rd Round, state func() State) error {
	if c.Every > 0 && rd.Round%c.Every == 0 && rd.Round < rd.Planned {
		return c.save(state())
	}
	return nil
}

// Interrupted implements Callback.
func (c *Checkpoints) Interrupted(st State) error { return c.save(st) }

func (c *Checkpoints) save(st State) error {
	if st.Round == c.saved {
		return nil
	}
	c.saved = st.Round
	return c.Save(st)
}
