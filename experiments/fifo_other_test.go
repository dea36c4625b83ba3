//go:build !unix

package experiments

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs here") }
