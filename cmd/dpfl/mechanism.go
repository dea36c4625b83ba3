package main

import (
	"context"
	"fmt"
	"io"
)

// cmdMechanism compares noise strategies offline (issue 4; being written).
func cmdMechanism(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dpfl mechanism: not built yet")
	return exitFailure
}
