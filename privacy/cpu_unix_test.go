//go:build unix

package privacy

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (user and system), and
// true: the measure the tests' time limits apply to, so that other
// processes on a loaded machine do not fail them.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
