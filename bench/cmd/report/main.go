// Command report turns `go test -bench` output of the bench module into a
// markdown results table (with ratios against the best peer per scenario)
// and a PNG bar chart of cycles/s, for the README.
//
//	go run ./cmd/report -in results/raw.txt -md results/RESULTS.md -png results/chart.png
package main

import (
	"bufio"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"log"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// row is one benchmark line: name and metrics by unit.
type row struct {
	group, sub string // e.g. "Scenarios/S3-16workers-1key", "lockkit"
	metrics    map[string]float64
}

var (
	lineRE = regexp.MustCompile(`^Benchmark(\S+?)-\d+\s+(\d+)\s+(.*)$`)
	// A benchmark's name alone on its line: something the benchmark logged
	// while it ran (go-redis's pool does) cut the line after the name, and
	// its figures follow on a line of their own (restRE).
	nameRE = regexp.MustCompile(`^(Benchmark\S+-\d+)\s`)
	restRE = regexp.MustCompile(`^\s+\d+\s+\S+ ns/op`)
)

func parse(r io.Reader) (rows []row, header []string) {
	sc := bufio.NewScanner(r)
	cut := "" // the name of a benchmark whose line was cut
	for sc.Scan() {
		line := sc.Text()
		if cut != "" {
			switch {
			case restRE.MatchString(line):
				line, cut = cut+line, ""
			case !strings.HasPrefix(line, "Benchmark"):
				continue // more of what was logged into the cut line
			default:
				cut = ""
			}
		}
		for _, p := range []string{"goos:", "goarch:", "cpu:", "pkg:"} {
			if strings.HasPrefix(line, p) {
				header = append(header, line)
			}
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			if n := nameRE.FindStringSubmatch(line); n != nil {
				cut = n[1]
			}
			continue
		}
		name := m[1]
		f := strings.Fields(m[3])
		mt := map[string]float64{}
		for j := 0; j+1 < len(f); j += 2 {
			v, err := strconv.ParseFloat(f[j], 64)
			if err == nil {
				mt[f[j+1]] = v
			}
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			rows = append(rows, perLibrary(name, mt)...)
			continue
		}
		rows = append(rows, row{group: name[:i], sub: name[i+1:], metrics: mt})
	}
	return rows, header
}

// turnUnits are the units of a benchmark whose libraries or variants take
// turns in one loop and report each one's metrics as <name>-<unit>
// (bench's BenchmarkS1Turns, core's BenchmarkFeatureCost). A unit comes
// before every unit it ends with: "-us" must not take "-redis-us" or
// "-client-cpu-us".
var turnUnits = []string{"vs-default", "cycles/s", "client-cpu-us", "redis-cpu-us", "redis-us", "vs-bare", "allocs", "us"}

// perLibrary splits such a benchmark into one row per library or variant;
// other benchmarks without sub-benchmarks give none.
func perLibrary(name string, mt map[string]float64) []row {
	byLib := map[string]map[string]float64{}
	for k, v := range mt {
		for _, unit := range turnUnits {
			if lib, ok := strings.CutSuffix(k, "-"+unit); ok {
				if byLib[lib] == nil {
					byLib[lib] = map[string]float64{}
				}
				byLib[lib][unit] = v
				break
			}
		}
	}
	libs := make([]string, 0, len(byLib))
	for lib := range byLib {
		libs = append(libs, lib)
	}
	sort.Strings(libs)
	rows := make([]row, 0, len(libs))
	for _, lib := range libs {
		rows = append(rows, row{group: name, sub: lib, metrics: byLib[lib]})
	}
	return rows
}

func main() {
	in := flag.String("in", "results/raw.txt", "go test -bench output")
	md := flag.String("md", "results/RESULTS.md", "markdown table to write")
	pngOut := flag.String("png", "results/chart.png", "chart to write")
	note := flag.String("note", "", "a line about the machine and run to put on top")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		log.Fatal(err)
	}
	rows, header := parse(f)
	f.Close()
	groups := map[string][]row{}
	var order []string
	for _, r := range rows {
		if _, ok := groups[r.group]; !ok {
			order = append(order, r.group)
		}
		groups[r.group] = append(groups[r.group], r)
	}
	var b strings.Builder
	fmt.Fprintln(&b, "# Benchmark results")
	fmt.Fprintln(&b)
	if *note != "" {
		fmt.Fprintln(&b, *note)
		fmt.Fprintln(&b)
	}
	for _, h := range header {
		fmt.Fprintf(&b, "- `%s`\n", h)
	}
	fmt.Fprintln(&b)
	for _, g := range order {
		rs := groups[g]
		fmt.Fprintf(&b, "## %s\n\n", strings.TrimPrefix(g, "Scenarios/"))
		cols := columns(rs)
		fmt.Fprintf(&b, "| library | %s |\n|---|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
		for _, r := range rs {
			var cells []string
			for _, c := range cols {
				if v, ok := r.metrics[c]; ok {
					cells = append(cells, fmtNum(v))
				} else {
					cells = append(cells, "")
				}
			}
			fmt.Fprintf(&b, "| %s | %s |\n", r.sub, strings.Join(cells, " | "))
		}
		if ratio := ratioLine(rs); ratio != "" {
			fmt.Fprintf(&b, "\n%s\n", ratio)
		}
		fmt.Fprintln(&b)
	}
	if err := os.WriteFile(*md, []byte(b.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := chart(*pngOut, order, groups); err != nil {
		log.Fatal(err)
	}
}

func columns(rs []row) []string {
	pref := []string{"cycles/s", "vs-bare", "us", "vs-default", "allocs", "client-cpu-us", "redis-cpu-us", "redis-us", "ceiling-cycles/s", "min-share", "p50-ms", "p99-ms", "max-ms", "redis-cpu-us/cycle", "client-cpu-us/cycle", "redis-us/cycle", "redis-instr/cycle", "rtt/cycle", "allocs/op", "B/op", "ns/op", "failed"}
	seen := map[string]bool{}
	for _, r := range rs {
		for k := range r.metrics {
			seen[k] = true
		}
	}
	var cols []string
	for _, p := range pref {
		if seen[p] {
			cols = append(cols, p)
			delete(seen, p)
		}
	}
	var rest []string
	for k := range seen {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	return append(cols, rest...)
}

// peer: a row of another library, not lockkit nor a floor (bare-setnx, and
// S1Turns' floor-* rows, which send commands without a lock library).
func peer(sub string) bool {
	return sub != "lockkit" && sub != "bare-setnx" && !strings.HasPrefix(sub, "floor-")
}

// ratioLine compares lockkit with the best peer (bare-setnx is a floor, not a
// peer), or for Redis's instruction counts with the lowest peer and the floor.
func ratioLine(rs []row) string {
	var lk *row
	var best *row
	var bare *row
	for i := range rs {
		r := &rs[i]
		switch r.sub {
		case "lockkit":
			lk = r
		case "bare-setnx":
			bare = r
		default:
			if _, ok := r.metrics["cycles/s"]; ok && peer(r.sub) && (best == nil || r.metrics["cycles/s"] > best.metrics["cycles/s"]) {
				best = r
			}
		}
	}
	if lk == nil {
		return ""
	}
	var parts []string
	if v := lk.metrics["redis-instr/cycle"]; v > 0 {
		if low := lowestPeer(rs, "redis-instr/cycle"); low != nil && low.metrics["redis-instr/cycle"] > 0 {
			parts = append(parts, fmt.Sprintf("Redis's instructions per cycle: lockkit **%.2f×** the lowest peer's (%s, %.0f)",
				v/low.metrics["redis-instr/cycle"], low.sub, low.metrics["redis-instr/cycle"]))
		}
		if bare != nil && bare.metrics["redis-instr/cycle"] > 0 {
			parts = append(parts, fmt.Sprintf("%.2f× bare SET NX + DEL's (%.0f)", v/bare.metrics["redis-instr/cycle"], bare.metrics["redis-instr/cycle"]))
		}
	}
	if lk.metrics["cycles/s"] == 0 {
		return strings.Join(parts, "; ")
	}
	if best != nil {
		parts = append(parts, fmt.Sprintf("lockkit / best peer (%s): **%.2f×** cycles/s", best.sub, lk.metrics["cycles/s"]/best.metrics["cycles/s"]))
		if c, ok := best.metrics["redis-cpu-us/cycle"]; ok && c > 0 {
			parts = append(parts, fmt.Sprintf("Redis CPU per cycle %.2f× the best peer's", lk.metrics["redis-cpu-us/cycle"]/c))
		}
	}
	if low := lowestPeer(rs, "redis-us/cycle"); low != nil && low.metrics["redis-us/cycle"] > 0 {
		parts = append(parts, fmt.Sprintf("Redis's own time per cycle (commandstats) %.2f× the lowest peer's (%s, %.1f µs)",
			lk.metrics["redis-us/cycle"]/low.metrics["redis-us/cycle"], low.sub, low.metrics["redis-us/cycle"]))
	}
	if bare != nil {
		parts = append(parts, fmt.Sprintf("lockkit / bare SET NX + DEL: **%.2f×**", lk.metrics["cycles/s"]/bare.metrics["cycles/s"]))
	}
	if c := lk.metrics["ceiling-cycles/s"]; c > 0 {
		line := fmt.Sprintf("lockkit at %.0f%% of the ceiling", 100*lk.metrics["cycles/s"]/c)
		// The same ceiling with the hold lockkit's holders really had in
		// the run (hold-ms) in place of the sleep measured before it.
		if sleep, ping, hold := lk.metrics["sleep-ms"], lk.metrics["ping-ms"], lk.metrics["hold-ms"]; sleep > 0 && hold > 0 {
			held := c * (sleep + ping) / (hold + ping)
			line += fmt.Sprintf(" (%.0f%% of %.0f, the ceiling with the %.2f ms its holders really slept in the run)", 100*lk.metrics["cycles/s"]/held, held, hold)
		}
		parts = append(parts, line)
	}
	if s, ok := lk.metrics["min-share"]; ok {
		line := fmt.Sprintf("least-served replica's share: lockkit %.2f", s)
		if best != nil {
			if bs, ok := best.metrics["min-share"]; ok {
				line += fmt.Sprintf(", %s %.2f", best.sub, bs)
			}
		}
		parts = append(parts, line+" (1 = even)")
	}
	return strings.Join(parts, "; ")
}

// lowestPeer is the peer (neither lockkit nor the bare floor) with the
// smallest value of metric.
func lowestPeer(rs []row, metric string) *row {
	var low *row
	for i := range rs {
		r := &rs[i]
		v, ok := r.metrics[metric]
		if !ok || !peer(r.sub) {
			continue
		}
		if low == nil || v < low.metrics[metric] {
			low = r
		}
	}
	return low
}

func fmtNum(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// chart draws one panel per scenario group that has cycles/s: a horizontal
// bar per library, scaled to the group's best.
func chart(path string, order []string, groups map[string][]row) error {
	const (
		w      = 900
		barH   = 16
		gap    = 4
		left   = 170
		title  = 22
		margin = 10
	)
	var panels []string
	h := margin
	for _, g := range order {
		if _, ok := groups[g][0].metrics["cycles/s"]; !ok {
			continue
		}
		panels = append(panels, g)
		h += title + len(groups[g])*(barH+gap) + margin
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	text := func(x, y int, s string, c color.Color) {
		d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
		d.DrawString(s)
	}
	y := margin
	for _, g := range panels {
		text(margin, y+14, strings.TrimPrefix(g, "Scenarios/")+"  (cycles/s, longer is better)", color.Black)
		y += title
		maxV := 0.0
		for _, r := range groups[g] {
			maxV = max(maxV, r.metrics["cycles/s"])
		}
		for _, r := range groups[g] {
			v := r.metrics["cycles/s"]
			bw := int(float64(w-left-120) * v / maxV)
			col := color.RGBA{0x90, 0xa4, 0xae, 0xff}
			if r.sub == "lockkit" {
				col = color.RGBA{0x1e, 0x88, 0xe5, 0xff}
			}
			draw.Draw(img, image.Rect(left, y, left+max(bw, 1), y+barH), image.NewUniform(col), image.Point{}, draw.Src)
			text(margin, y+12, r.sub, color.Black)
			text(left+bw+6, y+12, fmtNum(v), color.Black)
			y += barH + gap
		}
		y += margin
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}
