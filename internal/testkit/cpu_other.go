//go:build !unix

package testkit

import "time"

// ProcessCPU is a Meter that reads zero: no per-process CPU time here (see
// cpu_unix.go).
func ProcessCPU() time.Duration { return 0 }
