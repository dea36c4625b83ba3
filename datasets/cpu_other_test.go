//go:build !unix

package datasets

import "time"

// cpu is unknown here (0).
func cpu() time.Duration { return 0 }
