package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockkit/lockkit/otellock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// shownAttrs are the span attributes the tree prints.
var shownAttrs = []attribute.Key{
	otellock.AttrName, otellock.AttrOutcome, otellock.AttrAttempts, otellock.AttrFencingToken,
	otellock.AttrWaitStrategy, otellock.AttrErrorType, "http.response.status_code",
}

// printTree prints the spans as one tree per trace, with events and links;
// a link names the span it points to when that span was recorded here.
func printTree(out io.Writer, spans []sdktrace.ReadOnlySpan) {
	byTrace := map[trace.TraceID][]sdktrace.ReadOnlySpan{}
	bySpan := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var traces []trace.TraceID
	for _, s := range spans {
		id := s.SpanContext().TraceID()
		if _, ok := byTrace[id]; !ok {
			traces = append(traces, id)
		}
		byTrace[id] = append(byTrace[id], s)
		bySpan[s.SpanContext().SpanID()] = s
	}
	first := func(id trace.TraceID) time.Time {
		return slices.MinFunc(byTrace[id], func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }).StartTime()
	}
	slices.SortFunc(traces, func(a, b trace.TraceID) int { return first(a).Compare(first(b)) })
	number := map[trace.TraceID]int{}
	for i, id := range traces {
		number[id] = i + 1
	}

	fmt.Fprintf(out, "# span tree (%d traces)\n", len(traces))
	for _, id := range traces {
		fmt.Fprintf(out, "trace %d %s\n", number[id], id)
		children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
		var roots []sdktrace.ReadOnlySpan
		for _, s := range byTrace[id] {
			if _, ok := bySpan[s.Parent().SpanID()]; ok && s.Parent().TraceID() == id {
				children[s.Parent().SpanID()] = append(children[s.Parent().SpanID()], s)
			} else {
				roots = append(roots, s)
			}
		}
		var walk func(s sdktrace.ReadOnlySpan, indent string, last bool)
		walk = func(s sdktrace.ReadOnlySpan, indent string, last bool) {
			branch, next := "├─ ", "│  "
			if last {
				branch, next = "└─ ", "   "
			}
			fmt.Fprintf(out, "%s%s%s [%s] %s%s%s\n", indent, branch, s.Name(), s.SpanKind(),
				s.EndTime().Sub(s.StartTime()).Round(10*time.Microsecond), attrText(s.Attributes()), statusText(s))
			for _, ev := range s.Events() {
				fmt.Fprintf(out, "%s%s  event %s%s\n", indent, next, ev.Name, attrText(ev.Attributes))
			}
			for _, l := range s.Links() {
				to := fmt.Sprintf("trace %s span %s", l.SpanContext.TraceID(), l.SpanContext.SpanID())
				if ls, ok := bySpan[l.SpanContext.SpanID()]; ok {
					to = fmt.Sprintf("trace %d, span %s %s", number[l.SpanContext.TraceID()], ls.Name(), l.SpanContext.SpanID())
				}
				fmt.Fprintf(out, "%s%s  link → %s (holder%s)\n", indent, next, to, attrText(l.Attributes))
			}
			kids := children[s.SpanContext().SpanID()]
			slices.SortFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
			for i, k := range kids {
				walk(k, indent+next, i == len(kids)-1)
			}
		}
		for i, r := range roots {
			walk(r, "", i == len(roots)-1)
		}
	}
}

func attrText(kv []attribute.KeyValue) string {
	var b strings.Builder
	for _, a := range kv {
		if slices.Contains(shownAttrs, a.Key) || strings.HasPrefix(string(a.Key), "lockkit.lock.holder.") || a.Key == otellock.AttrAttempt {
			fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(string(a.Key), "lockkit.lock."), a.Value.Emit())
		}
	}
	return b.String()
}

func statusText(s sdktrace.ReadOnlySpan) string {
	if s.Status().Description == "" && s.Status().Code.String() == "Unset" {
		return ""
	}
	return fmt.Sprintf(" status=%s %q", s.Status().Code, s.Status().Description)
}

// metricLine is one data point of a lockkit metric.
type metricLine struct {
	name, attrs string
	value       string
}

// collectMetrics reads the lockkit metrics now.
func collectMetrics(ctx context.Context, tel *telemetry) ([]metricLine, error) {
	var rm metricdata.ResourceMetrics
	if err := tel.metrics.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	var lines []metricLine
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otellock.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			add := func(set attribute.Set, v string) {
				var parts []string
				for _, kv := range set.ToSlice() {
					parts = append(parts, fmt.Sprintf("%s=%q", kv.Key, kv.Value.Emit()))
				}
				lines = append(lines, metricLine{name: m.Name, attrs: "{" + strings.Join(parts, ",") + "}", value: v})
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, fmt.Sprint(p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, fmt.Sprintf("count=%d sum=%.4fs", p.Count, p.Sum))
				}
			}
		}
	}
	slices.SortFunc(lines, func(a, b metricLine) int { return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.attrs, b.attrs)) })
	return lines, nil
}

func printMetrics(out io.Writer, lines []metricLine) {
	fmt.Fprintf(out, "# lockkit metrics\n")
	for _, l := range lines {
		fmt.Fprintf(out, "%s%s %s\n", l.name, l.attrs, l.value)
	}
}
