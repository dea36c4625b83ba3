//go:build unix

package main

import (
	"syscall"
	"testing"
	"time"
)

// mechanismStopLimit is how soon dpfl mechanism must end after a signal in
// its dense metrics (products of n×n matrices that take tens of seconds
// at these sizes): they run aside and the command returns at once.
const mechanismStopLimit = 2 * time.Second

// TestSignalDuringMechanismMetrics: SIGINT during a comparison's dense
// evaluation (n = 2500, after dpfedavg starts) ends dpfl mechanism within
// mechanismStopLimit with code 130, and SIGTERM while the -memory
// comparison evaluates BLT (n = 3000) with code 143.
func TestSignalDuringMechanismMetrics(t *testing.T) {
	for _, c := range []struct {
		args []string
		line string
		sig  syscall.Signal
	}{
		{[]string{"mechanism", "-n", "2500", "-cache", ""}, "dpfl mechanism: dpfedavg...", syscall.SIGINT},
		{[]string{"mechanism", "-n", "3000", "-memory", "2", "-cache", ""}, "dpfl mechanism: memory 2: blt...", syscall.SIGTERM},
	} {
		cmd, lines, _ := startDPFL(t, t.TempDir(), c.args...)
		waitFor(t, lines, c.line, time.Minute)
		time.Sleep(time.Second) // into the n×n products
		start := time.Now()
		stopWith(t, cmd, lines, c.sig)
		if took := time.Since(start); took > mechanismStopLimit {
			t.Errorf("%v: stopped %v after %v (limit %v)", c.args, took, c.sig, mechanismStopLimit)
		}
	}
}
