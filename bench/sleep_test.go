package bench

import (
	"net"
	"testing"
	"time"
)

// BenchmarkSleepDuringReply measures what the S4–S6 critical section,
// time.Sleep(1ms), really takes in this Go runtime, alone and when a
// network reply arrives 150 µs into it, as the reply of a hand-off does
// when the next holder starts before it (lockkit's local hand-off). The
// netpoller, woken by the reply, waits again for the rest of the sleep in
// whole milliseconds (epoll's unit), so the sleep ends up to a millisecond
// late: hold-ms in the scenarios grows by about the reply's arrival time.
// A critical section that computes or does I/O is not delayed this way.
func BenchmarkSleepDuringReply(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			for t := time.Now(); time.Since(t) < 150*time.Microsecond; { // a server's reply time, spun, not slept
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, withReply := range []bool{false, true} {
		name := "alone"
		if withReply {
			name = "reply-at-150us"
		}
		b.Run(name, func(b *testing.B) {
			sleeps := make([]time.Duration, 0, b.N)
			for range b.N {
				done := make(chan time.Duration)
				go func() {
					t := time.Now()
					time.Sleep(time.Millisecond)
					done <- time.Since(t)
				}()
				if withReply {
					buf := []byte{1}
					if _, err := conn.Write(buf); err != nil {
						b.Fatal(err)
					}
					if _, err := conn.Read(buf); err != nil {
						b.Fatal(err)
					}
				}
				sleeps = append(sleeps, <-done)
			}
			sortDurations(sleeps)
			b.ReportMetric(float64(percentile(sleeps, 0.5))/float64(time.Millisecond), "sleep-p50-ms")
		})
	}
}
