//go:build unix

package datasets

import (
	"syscall"
	"time"
)

// cpu is the CPU time this process has used.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
