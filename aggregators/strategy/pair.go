package strategy

import (
	"runtime"
	"sync/atomic"
)

// spinPair hands part of each step of a computation to one helper
// goroutine that polls for it, for steps too short (microseconds) for
// channels or a WaitGroup, whose futex wake-ups would cost about as much
// as the step. The caller hands a job (give), does its own part, and waits
// for the ticket (wait). Between start and stop the helper spins, so a
// computation starts the pair only around its parallel stretch.
type spinPair struct {
	on bool
	// job is the helper's part of the current step (nil: return), written
	// before seq is incremented; the helper sets done to seq when the job
	// has returned.
	job       func()
	seq, done atomic.Uint64
}

// spinLimit is how many times a waiting goroutine polls before it yields
// its thread (runtime.Gosched), so that it does not hold a CPU that the
// goroutine it waits for needs (GOMAXPROCS 1, or other work running).
const spinLimit = 1 << 12

// start starts the helper goroutine if two threads are available
// (GOMAXPROCS ≥ 2).
func (p *spinPair) start() {
	p.on = runtime.GOMAXPROCS(0) >= 2
	if !p.on {
		return
	}
	p.seq.Store(0)
	p.done.Store(0)
	go p.serve()
}

// stop stops the helper goroutine (a no-op if there is none).
func (p *spinPair) stop() {
	if !p.on {
		return
	}
	p.job = nil
	waitFor(&p.done, p.seq.Add(1))
	p.on = false
}

func (p *spinPair) serve() {
	for g := uint64(1); ; g++ {
		waitFor(&p.seq, g)
		job := p.job
		if job != nil {
			job()
		}
		p.done.Store(g)
		if job == nil {
			return
		}
	}
}

// give hands job to the helper goroutine and returns the ticket to wait
// for; without a helper it runs job itself and returns 0.
func (p *spinPair) give(job func()) uint64 {
	if !p.on {
		job()
		return 0
	}
	p.job = job
	return p.seq.Add(1)
}

// wait returns when the job of ticket g has returned.
func (p *spinPair) wait(g uint64) {
	if g != 0 {
		waitFor(&p.done, g)
	}
}

// waitFor polls v until it reaches g, yielding the thread every spinLimit
// polls.
func waitFor(v *atomic.Uint64, g uint64) {
	for i := 0; v.Load() < g; i++ {
		if i == spinLimit {
			runtime.Gosched()
			i = 0
		}
	}
}
