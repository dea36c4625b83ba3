package main

import (
	"context"
	"fmt"
	"io"
)

// accountConfig prints the privacy account of a run configuration without
// training (dpfl account CONFIG.yaml). (Being written; see issue 3.)
func accountConfig(ctx context.Context, path string, asJSON bool, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dpfl account CONFIG.yaml: not built yet")
	return exitFailure
}
