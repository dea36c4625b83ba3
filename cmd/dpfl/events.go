package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"dpfl/experiments"
	"dpfl/results"
)

// eventStream writes a running run's or grid's progress as JSON lines
// (-events FILE), one object per event, appended and flushed as it happens,
// so another program can follow it (tail -f, a notebook, a dashboard):
//
//	{"time":"…","event":"round","run":"quickstart","round":3,"rounds":60,"accuracy":0.81,"evaluated":true,"epsilon":1.2,"epsilon_label":"…"}
//	{"time":"…","event":"end","run":"quickstart","status":"complete","final_accuracy":0.89,"dir":"…"}
//
// A grid writes "start", "round" and "done" events for each point, with the
// point's index and run ID. Non-finite numbers are written as null.
type eventStream struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

// openEvents opens path for appending (a resumed run or grid continues its
// stream).
func openEvents(path string) (*eventStream, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("-events: %w", err)
	}
	return &eventStream{f: f}, nil
}

// emit writes one event; the first write error is kept for close.
func (e *eventStream) emit(kind string, fields map[string]any) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	obj := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "event": kind}
	for k, v := range fields {
		if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			v = nil
		}
		obj[k] = v
	}
	b, err := json.Marshal(obj)
	if err == nil {
		_, err = e.f.Write(append(b, '\n'))
	}
	if err != nil && e.err == nil {
		e.err = err
	}
}

// close closes the file and reports the first error.
func (e *eventStream) close() error {
	if e == nil {
		return nil
	}
	if err := e.f.Close(); err != nil && e.err == nil {
		e.err = err
	}
	if e.err != nil {
		return fmt.Errorf("-events: %w", e.err)
	}
	return nil
}

// round is a run's AfterRound hook.
func (e *eventStream) round(name string) func(experiments.RoundReport) {
	return func(r experiments.RoundReport) {
		f := map[string]any{"run": name, "round": r.Round, "rounds": r.Rounds, "accuracy": r.Accuracy, "evaluated": r.Evaluated}
		if r.Evaluated {
			f["epsilon"], f["epsilon_label"] = r.Epsilon, r.EpsilonLabel
		}
		e.emit("round", f)
	}
}

// runEvents opens path ("" : no stream) and adds its round hook to
// opts.AfterRound, after the progress bar's.
func runEvents(path, name string, opts *experiments.Options) (*eventStream, error) {
	if path == "" {
		return nil, nil
	}
	e, err := openEvents(path)
	if err != nil {
		return nil, err
	}
	bar, mine := opts.AfterRound, e.round(name)
	opts.AfterRound = func(r experiments.RoundReport) {
		if bar != nil {
			bar(r)
		}
		mine(r)
	}
	return e, nil
}

// end writes a run's last event (its summary, or its error) and closes the
// stream.
func (e *eventStream) end(name string, out *experiments.Outcome, err error) error {
	if e == nil {
		return nil
	}
	if err != nil {
		e.emit("error", map[string]any{"run": name, "error": err.Error()})
	} else {
		e.emit("end", summaryFields(&out.Summary, out.Dir))
	}
	return e.close()
}

// summaryFields are a finished run's fields.
func summaryFields(s *results.Summary, dir string) map[string]any {
	f := map[string]any{"run": s.Name, "run_id": s.RunID, "status": s.Status, "rounds_done": s.Rounds,
		"final_accuracy": s.FinalAccuracy, "best_accuracy": s.BestAccuracy, "dir": dir}
	if s.Epsilon != nil {
		f["epsilon"], f["delta"], f["accountant"] = *s.Epsilon, s.Delta, s.EpsilonMethod
	}
	return f
}

// gridEventStream opens path ("": no stream) and puts it in front of
// opts.Events (the display), which it passes every event on to.
func gridEventStream(path string, opts *experiments.GridOptions) (*eventStream, error) {
	if path == "" {
		return nil, nil
	}
	e, err := openEvents(path)
	if err != nil {
		return nil, err
	}
	opts.Events = gridEvents{e: e, next: opts.Events}
	return e, nil
}

// gridEvents is a grid's events, passed on to next (the display) too.
type gridEvents struct {
	e    *eventStream
	next experiments.GridEvents // nil: none
}

func (g gridEvents) point(p experiments.Point) map[string]any {
	return map[string]any{"point": p.Index + 1, "run_id": p.ID, "run": p.Config.Name}
}

// Start implements experiments.GridEvents.
func (g gridEvents) Start(p experiments.Point) {
	g.e.emit("start", g.point(p))
	if g.next != nil {
		g.next.Start(p)
	}
}

// Round implements experiments.GridEvents.
func (g gridEvents) Round(p experiments.Point, round int, acc float64) {
	f := g.point(p)
	f["round"], f["rounds"], f["accuracy"] = round, p.Config.Rounds, acc
	g.e.emit("round", f)
	if g.next != nil {
		g.next.Round(p, round, acc)
	}
}

// Done implements experiments.GridEvents.
func (g gridEvents) Done(p experiments.Point, s *results.Summary, err error) {
	f := g.point(p)
	if s != nil {
		f["status"], f["final_accuracy"] = s.Status, s.FinalAccuracy
		if s.Epsilon != nil {
			f["epsilon"] = *s.Epsilon
		}
	}
	if err != nil {
		f["error"] = err.Error()
	}
	g.e.emit("done", f)
	if g.next != nil {
		g.next.Done(p, s, err)
	}
}
