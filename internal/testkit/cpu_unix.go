//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU is a Meter (see TurnsMetered): the CPU time, user and system,
// this process has used so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
