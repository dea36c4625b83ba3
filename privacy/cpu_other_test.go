//go:build !unix

package privacy

import "time"

// cpuTime reports false where the process's CPU time is not read: the
// tests' time limits then apply to wall time.
func cpuTime() (time.Duration, bool) { return 0, false }
