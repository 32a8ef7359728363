package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.uber.org/goleak"

	"github.com/lockkit/lockkit/examples/internal/exampletest"
	"github.com/lockkit/lockkit/internal/redistest"
)

// TestMain is the program itself when MainHidesSecrets runs it.
func TestMain(m *testing.M) {
	exampletest.AsMain(main)
	goleak.VerifyTestMain(m)
}

// exportedSpan is what the test reads of a span the stdout exporter wrote.
type exportedSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ SpanID string }
	Events      []struct{ Name string }
	Links       []struct {
		SpanContext struct{ TraceID, SpanID string }
	}
}

// The program on its embedded Redis and on a real redis-server (REDIS_URL)
// prints, through the stdout exporter, two "pay" spans in a trace each,
// each with its lock.acquire under it; one lock.acquire met the other
// payment holding the lock: a lock.contended event, and one link, to that
// payment's span. Then the exporter's metrics, otellock's among them.
func TestRunPrintsTheHolderLink(t *testing.T) {
	for name, url := range map[string]func(t *testing.T) string{
		"embedded":     func(*testing.T) string { return "" },
		"redis-server": func(t *testing.T) string { return "redis://" + redistest.Start(t).Addr() + "/0" },
	} {
		t.Run(name, func(t *testing.T) {
			prevTP, prevMP, prevProp := otel.GetTracerProvider(), otel.GetMeterProvider(), otel.GetTextMapPropagator()
			t.Cleanup(func() {
				otel.SetTracerProvider(prevTP)
				otel.SetMeterProvider(prevMP)
				otel.SetTextMapPropagator(prevProp)
			})
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			var out bytes.Buffer
			if err := run(ctx, url(t), &out); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			checkPrinted(t, out.String())
		})
	}
}

// checkPrinted checks what run printed (see TestRunPrintsTheHolderLink).
func checkPrinted(t *testing.T, printed string) {
	t.Helper()
	var spans []exportedSpan
	metrics := false
	sc := bufio.NewScanner(strings.NewReader(printed))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, `{"Name":`):
			var s exportedSpan
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("a span line: %v\n%s", err, line)
			}
			spans = append(spans, s)
		case strings.HasPrefix(line, `{"Resource":`):
			metrics = metrics || strings.Contains(line, `"lockkit.lock.acquire.duration"`)
		}
	}
	pays := map[string]exportedSpan{} // by span ID
	for _, s := range spans {
		if s.Name == "pay" {
			pays[s.SpanContext.SpanID] = s
		}
	}
	if len(pays) != 2 {
		t.Fatalf("%d pay spans printed, want 2:\n%s", len(pays), printed)
	}
	waiters := 0
	for _, s := range spans {
		if s.Name != "lock.acquire" {
			continue
		}
		own, ok := pays[s.Parent.SpanID]
		if !ok || own.SpanContext.TraceID != s.SpanContext.TraceID {
			t.Errorf("a lock.acquire span is not under a pay span: %+v", s)
			continue
		}
		if len(s.Events) == 0 && len(s.Links) == 0 {
			continue // the holder's: it met nobody
		}
		waiters++
		var held exportedSpan
		linked := len(s.Links) == 1
		if linked {
			held, linked = pays[s.Links[0].SpanContext.SpanID]
		}
		if !linked || held.SpanContext == own.SpanContext || held.SpanContext.TraceID != s.Links[0].SpanContext.TraceID ||
			len(s.Events) != 1 || s.Events[0].Name != "lock.contended" {
			t.Errorf("the waiter's lock.acquire: events %+v, links %+v; want one lock.contended and one link, to the other pay span", s.Events, s.Links)
		}
	}
	if waiters != 1 {
		t.Errorf("%d lock.acquire spans met a holder, want 1:\n%s", waiters, printed)
	}
	if !metrics {
		t.Errorf("no lockkit metrics printed:\n%s", printed)
	}
}

// The program, run as a process, refuses a REDIS_URL it cannot use without
// printing the password in it, however it is spelled.
func TestMainHidesSecrets(t *testing.T) { exampletest.MainHidesSecrets(t) }
