package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"dpfl/aggregators/strategy"
)

// mechProgress reports a comparison's progress on stderr: on a terminal one
// line updated in place (strategy i of m, its iterations and current
// loss or duality gap, the elapsed time and the estimated time left);
// elsewhere one line when each strategy starts and one when it ends, and
// one every half minute while a long optimization runs. It never writes to
// stdout.
type mechProgress struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	now      func() time.Time // the clock (time.Now; a fake one in tests)
	total    int
	i        int
	name     string
	start    time.Time
	iter     int
	value    string // "loss 1234" or "gap 1e-3"
	lastDraw time.Time
	done     time.Duration // time spent on the strategies already ended
	eta      etaInputs
}

// etaInputs are what an estimate of a strategy's time left is computed from:
// its iterations so far and their elapsed time, the optimizer's iteration
// limit (-maxiter), and for the fixed point the duality gap's trend towards
// its target (-gap).
type etaInputs struct {
	maxIter   int     // the L-BFGS limit (0: none known)
	targetGap float64 // the fixed point's target relative gap
	gap0      float64 // the first gap seen, at iteration iter0
	iter0     int
	gap       float64 // the latest gap (0: the strategy reports none)
}

// progressInterval is how often a line is written while a strategy runs
// when stderr is not a terminal.
const progressInterval = 30 * time.Second

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
	return &mechProgress{w: w, tty: isTerminal(w), total: total, now: time.Now}
}

// hook chains the progress onto the optimizers' callbacks of cfg.
func (p *mechProgress) hook(cfg *strategy.Config) {
	prev, prevDual := cfg.LBFGS.Progress, cfg.LBFGS.DualProgress
	p.eta.maxIter, p.eta.targetGap = cfg.LBFGS.MaxIter, cfg.Gap
	cfg.LBFGS.Progress = func(it int, loss float64) {
		if prev != nil {
			prev(it, loss)
		}
		p.update(it, fmt.Sprintf("loss %.6g", loss), 0)
	}
	cfg.GapProgress = func(it int, primal, dual float64) {
		gap := (primal - dual) / primal
		p.update(it, fmt.Sprintf("gap %.2e", gap), gap)
	}
	cfg.LBFGS.DualProgress = func(it int, res, bound float64) {
		if prevDual != nil {
			prevDual(it, res, bound)
		}
		p.update(it, fmt.Sprintf("multiplier residual %.2e", res), 0)
	}
}

// begin ends the previous strategy's line and starts name's.
func (p *mechProgress) begin(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
	p.i++
	p.name, p.start, p.iter, p.value = name, p.now(), 0, ""
	p.eta.gap, p.eta.gap0, p.eta.iter0 = 0, 0, 0
	p.lastDraw = p.start
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
	took := p.now().Sub(p.start)
	p.done += took
	msg := fmt.Sprintf("dpfl mechanism: strategy %d of %d: %s done in %s", p.i, p.total, p.name, took.Round(time.Millisecond))
	if p.iter > 0 {
		msg += fmt.Sprintf(" (%d iterations, %s)", p.iter, p.value)
	}
	if rest := p.restLocked(0, p.i); rest != "" {
		msg += "; " + rest
	}
	fmt.Fprintln(p.w, msg)
	p.name = ""
}

func (p *mechProgress) update(it int, value string, gap float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.iter, p.value = it, value
	if gap > 0 {
		if p.eta.gap0 == 0 {
			p.eta.gap0, p.eta.iter0 = gap, it
		}
		p.eta.gap = gap
	}
	since := p.now().Sub(p.lastDraw)
	if p.tty && since > 200*time.Millisecond {
		p.drawLocked()
	} else if !p.tty && since >= progressInterval {
		p.lastDraw = p.now()
		fmt.Fprintln(p.w, p.lineLocked())
	}
}

// drawLocked rewrites the terminal line.
func (p *mechProgress) drawLocked() {
	p.lastDraw = p.now()
	fmt.Fprintf(p.w, "\r%s\033[K", p.lineLocked())
}

// lineLocked is the current strategy's progress line: its iteration and
// value, the elapsed time and the estimates of the time left.
func (p *mechProgress) lineLocked() string {
	elapsed := p.now().Sub(p.start)
	msg := fmt.Sprintf("dpfl mechanism: strategy %d of %d: %s", p.i, p.total, p.name)
	if p.iter > 0 {
		msg += fmt.Sprintf(": iteration %d, %s", p.iter, p.value)
	}
	msg += fmt.Sprintf(", %s elapsed", elapsed.Round(time.Second))
	left, basis := strategyETA(p.iter, elapsed, p.eta)
	if basis != "" {
		msg += fmt.Sprintf(", %s left (%s)", fmtETA(left), basis)
	} else {
		left = 0
	}
	if rest := p.restLocked(left, p.i-1); rest != "" {
		msg += "; " + rest
	}
	return msg
}

// restLocked estimates the whole comparison's time left: left for the
// current strategy, and for each strategy not yet started the mean time of
// the finished ones; "" before one is finished (no basis yet) or when none
// remains to start.
func (p *mechProgress) restLocked(left time.Duration, finished int) string {
	remaining := p.total - p.i
	if finished < 1 || remaining < 1 {
		return ""
	}
	mean := p.done / time.Duration(finished)
	return fmt.Sprintf("all: ~%s left at %s per strategy so far", fmtETA(left+mean*time.Duration(remaining)), mean.Round(time.Second))
}

// strategyETA estimates the time a strategy has left after iter iterations
// in elapsed, and says what the estimate rests on ("" with no estimate).
// With a duality gap (the fixed point), the gap's geometric trend since its
// first value gives the iterations until the target gap; otherwise the
// optimizer's iteration limit gives an upper bound. Each iteration is taken
// to cost the mean so far.
func strategyETA(iter int, elapsed time.Duration, e etaInputs) (time.Duration, string) {
	if iter < 1 {
		return 0, ""
	}
	perIter := elapsed / time.Duration(iter)
	if e.gap > 0 && e.targetGap > 0 {
		if e.gap <= e.targetGap {
			return 0, "gap at target"
		}
		if iter > e.iter0 && e.gap < e.gap0 {
			rate := math.Log(e.gap0/e.gap) / float64(iter-e.iter0)
			its := math.Ceil(math.Log(e.gap/e.targetGap) / rate)
			return time.Duration(its) * perIter, "gap trend"
		}
		return 0, ""
	}
	if e.maxIter > iter {
		return time.Duration(e.maxIter-iter) * perIter, fmt.Sprintf("at most, to -maxiter %d", e.maxIter)
	}
	return 0, ""
}

// fmtETA prints a duration to the second (a minute or more without the
// seconds' fraction noise: 1m5s, 2h3m0s).
func fmtETA(d time.Duration) string {
	if d < time.Second {
		return "<1s"
	}
	return d.Round(time.Second).String()
}
