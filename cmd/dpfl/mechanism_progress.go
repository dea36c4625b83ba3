package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"dpfl/aggregators/strategy"
)

// mechProgress reports a comparison's progress on stderr: on a terminal one
// line updated in place (strategy i of m, its iterations and current
// loss or dual residual, the elapsed time); elsewhere one line when each
// strategy starts and one when it ends. It never writes to stdout.
type mechProgress struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	total    int
	i        int
	name     string
	start    time.Time
	iter     int
	value    string // "loss 1234" or "residual 1e-3"
	lastDraw time.Time
}

// isTerminal says whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newMechProgress(w io.Writer, total int) *mechProgress {
	return &mechProgress{w: w, tty: isTerminal(w), total: total}
}

// hook chains the progress onto the optimizers' callbacks of cfg.
func (p *mechProgress) hook(cfg *strategy.Config) {
	prev, prevDual := cfg.LBFGS.Progress, cfg.LBFGS.DualProgress
	cfg.LBFGS.Progress = func(it int, loss float64) {
		if prev != nil {
			prev(it, loss)
		}
		p.update(it, fmt.Sprintf("loss %.6g", loss))
	}
	cfg.GapProgress = func(it int, primal, dual float64) {
		p.update(it, fmt.Sprintf("gap %.2e", (primal-dual)/primal))
	}
	cfg.LBFGS.DualProgress = func(it int, res, bound float64) {
		if prevDual != nil {
			prevDual(it, res, bound)
		}
		p.update(it, fmt.Sprintf("multiplier residual %.2e", res))
	}
}

// begin ends the previous strategy's line and starts name's.
func (p *mechProgress) begin(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
	p.i++
	p.name, p.start, p.iter, p.value = name, time.Now(), 0, ""
	if p.tty {
		p.drawLocked()
		return
	}
	fmt.Fprintf(p.w, "dpfl mechanism: strategy %d of %d: %s...\n", p.i, p.total, name)
}

// end ends the last strategy's line.
func (p *mechProgress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
}

func (p *mechProgress) endLocked() {
	if p.name == "" {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	msg := fmt.Sprintf("dpfl mechanism: strategy %d of %d: %s done in %s", p.i, p.total, p.name, time.Since(p.start).Round(time.Millisecond))
	if p.iter > 0 {
		msg += fmt.Sprintf(" (%d iterations, %s)", p.iter, p.value)
	}
	fmt.Fprintln(p.w, msg)
	p.name = ""
}

func (p *mechProgress) update(it int, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.iter, p.value = it, value
	if p.tty && time.Since(p.lastDraw) > 200*time.Millisecond {
		p.drawLocked()
	}
}

// drawLocked rewrites the terminal line.
func (p *mechProgress) drawLocked() {
	p.lastDraw = time.Now()
	msg := fmt.Sprintf("dpfl mechanism: strategy %d of %d: %s", p.i, p.total, p.name)
	if p.iter > 0 {
		msg += fmt.Sprintf(": iteration %d, %s", p.iter, p.value)
	}
	msg += fmt.Sprintf(", %s elapsed", time.Since(p.start).Round(time.Second))
	fmt.Fprintf(p.w, "\r%s\033[K", msg)
}
