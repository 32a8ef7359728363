//go:build !unix

package testkit

import "time"

// processCPU: no per-process CPU time here (see cpu_unix.go).
func processCPU() time.Duration { return 0 }
