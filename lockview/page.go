package lockview

import (
	"fmt"
	"html/template"
	"time"
)

// pageData is the Snapshot with what the page adds: the refresh interval
// (none on a lookup's page, so a refresh does not repeat the lookup) and
// the bars' scale.
type pageData struct {
	*Snapshot
	Refresh   int // seconds; 0: no refresh
	MaxKeyLen int
	maxWait   float64
}

func (v *View) pageData(s *Snapshot) pageData {
	d := pageData{Snapshot: s, MaxKeyLen: v.cfg.maxKeyLen}
	if s.Inspect == nil && v.cfg.refresh > 0 {
		d.Refresh = max(1, int(v.cfg.refresh.Round(time.Second)/time.Second))
	}
	for _, h := range s.HotKeys {
		d.maxWait = max(d.maxWait, h.WaitP99)
	}
	return d
}

// Bar is the width (percent) of a bar for a wait of w ms on the page's
// scale: the largest p99 shown.
func (d pageData) Bar(w float64) int {
	if d.maxWait <= 0 {
		return 0
	}
	return int(100 * w / d.maxWait)
}

// dur formats milliseconds for people.
func dur(msec float64) string {
	switch {
	case msec < 1:
		return fmt.Sprintf("%.0f µs", msec*1e3)
	case msec < 100:
		return fmt.Sprintf("%.1f ms", msec)
	case msec < 1e3:
		return fmt.Sprintf("%.0f ms", msec)
	case msec < 10e3:
		return fmt.Sprintf("%.2f s", msec/1e3)
	case msec < 600e3:
		return fmt.Sprintf("%.1f s", msec/1e3)
	}
	return time.Duration(msec * float64(time.Millisecond)).Round(time.Second).String()
}

// secs formats seconds for people, as dur does milliseconds (the
// Snapshot's WindowSeconds).
func secs(sec float64) string { return dur(sec * 1e3) }

// ago formats t relative to now.
func ago(now, t time.Time) string { return dur(float64(now.Sub(t).Microseconds())/1e3) + " ago" }

// style is the pages' stylesheet (the view's and the index's): inline, as
// the CSP allows nothing else.
const style = `<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.2em 2em;color:#1d232b;background:#fbfbfc}
h1{font-size:20px;margin:0 0 .2em}h2{font-size:16px;margin:1.4em 0 .4em}
.meta{color:#5b6470;font-size:13px}
table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 0 0 1px #e2e5ea}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eceef2;vertical-align:top}
th{background:#f3f4f7;font-weight:600;font-size:12px;color:#434b56}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;overflow-wrap:break-word}
.nw{white-space:nowrap}
.held{color:#0a7a3b;font-weight:600}.wait{color:#a35a00;font-weight:600}
.route{display:inline-block;white-space:nowrap;margin:0 .4em .1em 0;padding:0 .35em;border-radius:3px;background:#eef1f6;font-size:12px}
.bar{height:8px;background:#e3873a;border-radius:2px;min-width:1px}
.empty{color:#8a929c;font-style:italic}
.err{color:#a3211b}
form{margin:.4em 0}input[type=text]{width:28em;font:13px ui-monospace,monospace}
</style>`

// page is the HTML view. Every value that comes from keys, names, owners,
// metadata or errors goes through html/template's contextual escaping;
// the page has no script and loads nothing (the network may be closed and
// the CSP forbids it anyway).
var page = template.Must(template.New("page").Funcs(template.FuncMap{"dur": dur, "secs": secs, "ago": ago}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>locks · {{.Owner}}</title>
` + style + `</head><body>
<h1>Locks of <code>{{.Owner}}</code></h1>
<div class="meta">updated {{.Time.Format "15:04:05.000"}} · keys {{.KeyMode}}{{if .Refresh}} · refreshes every {{.Refresh}} s{{end}} · <a href="?format=json{{if .AllHotKeys}}&amp;keys=all{{end}}">JSON</a></div>

<h2 id="locks">Held and awaited by this process ({{.LocksTotal}})</h2>
<table><thead><tr><th>key</th><th>state</th><th>holder</th><th class="n">token</th><th class="n">held for</th><th class="n">TTL left</th><th class="n">waiting here</th><th>routes waiting</th><th class="n">oldest wait</th></tr></thead><tbody>
{{range .Locks}}<tr class="lock"><td><code>{{if .Key}}{{.Key}}{{else}}(hidden){{end}}</code></td>
<td>{{if .Held}}<span class="held">held</span>{{else}}<span class="wait">waiting</span>{{end}}{{if and .Kind (ne .Kind "mutex")}} <span class="meta">{{.Kind}}</span>{{end}}</td>
<td class="holder">{{if .Held}}<code>{{.Owner}}</code> (this process){{with .Name}} <span class="route">{{.}}</span>{{end}}{{else}}{{with .Holder}}<code>{{.Owner}}</code> <span class="nw meta">met {{ago $.Time .Seen}}</span>{{else}}<span class="empty">not met yet</span>{{end}}{{end}}</td>
<td class="n">{{if .Held}}{{.Token}}{{else}}{{with .Holder}}{{.Token}}{{end}}{{end}}</td><td class="n">{{if .Held}}{{dur .HeldFor}}{{end}}</td><td class="n">{{if .Held}}{{dur .TTLLeft}} / {{dur .TTL}}{{end}}</td>
<td class="n">{{.Waiters}}</td><td class="waiting">{{range .Waiting}}<span class="route">{{.}}</span>{{end}}</td><td class="n">{{if .OldestWaitSince}}{{dur .OldestWait}}{{end}}</td></tr>
{{else}}<tr><td colspan="9" class="empty">none</td></tr>{{end}}
</tbody></table>
{{if gt .LocksTotal (len .Locks)}}<p class="meta">{{len .Locks}} of {{.LocksTotal}} shown.</p>{{end}}

<h2 id="hot">{{if .AllHotKeys}}Keys acquired{{else}}Contended keys{{end}}, up to the last {{secs .WindowSeconds}}, by wait</h2>
<p class="meta">Contended: an acquire of this process met the key held by another lease. Each key keeps its last {{.SamplesPerKey}} acquires: a key with more in the window shows those, over the time in "covers".
{{if .AllHotKeys}}Contended keys first. <a href="?">Contended keys only</a>{{else if .HiddenHotKeys}}{{.HiddenHotKeys}} uncontended {{if eq .HiddenHotKeys 1}}key{{else}}keys{{end}} not shown: <a href="?keys=all">show all</a>{{end}}</p>
<table><thead><tr><th>key</th><th>routes</th><th class="n">acquires</th><th class="n">covers</th><th class="n">acquired</th><th class="n">not acquired</th><th class="n">failed</th><th class="n">wait p50</th><th class="n">wait p99</th><th style="width:12%">p99</th><th class="n">max</th><th class="n">total</th><th>last holder met</th></tr></thead><tbody>
{{range .HotKeys}}<tr class="hot"><td><code class="hotkey">{{if .Key}}{{.Key}}{{else}}(hidden){{end}}</code>{{if not .Contended}} <span class="meta">uncontended</span>{{end}}</td>
<td class="names">{{range .Names}}<span class="route">{{.}}</span>{{end}}{{if .MoreNames}}<span class="meta">and more</span>{{end}}</td>
<td class="n">{{if .Capped}}last {{end}}{{.Acquires}}</td><td class="n">{{dur .Covers}}</td><td class="n">{{.Acquired}}</td><td class="n">{{.Refused}}</td><td class="n">{{.Failed}}</td>
<td class="n">{{dur .WaitP50}}</td><td class="n">{{dur .WaitP99}}</td><td><div class="bar" style="width:{{$.Bar .WaitP99}}%"></div></td><td class="n">{{dur .WaitMax}}</td><td class="n">{{dur .WaitTotal}}</td>
<td>{{with .LastHolder}}<code>{{.Owner}}</code> <span class="nw">#{{.Token}}</span> <span class="nw meta">{{ago $.Time .Seen}}</span>{{end}}</td></tr>
{{else}}<tr><td colspan="13" class="empty">{{if .AllHotKeys}}no acquires in the window{{else}}no contended key in the window{{end}}</td></tr>{{end}}
</tbody></table>

<h2 id="losses">Recent losses ({{.LossesTotal}} in all)</h2>
<table><thead><tr><th>when</th><th>key</th><th>name</th><th class="n">token</th><th class="n">held for</th><th>cause</th></tr></thead><tbody>
{{range .Losses}}<tr class="loss"><td class="n">{{ago $.Time .Time}}</td><td><code>{{if .Key}}{{.Key}}{{else}}(hidden){{end}}</code></td><td>{{.Name}}</td><td class="n">{{.Token}}</td><td class="n">{{dur .HeldFor}}</td><td class="err">{{.Cause}}</td></tr>
{{else}}<tr><td colspan="6" class="empty">none</td></tr>{{end}}
</tbody></table>

<h2 id="errors">Recent Redis errors ({{.ErrorsTotal}} in all)</h2>
<table><thead><tr><th>when</th><th>op</th><th>key</th><th>name</th><th>error</th></tr></thead><tbody>
{{range .Errors}}<tr class="error"><td class="n">{{ago $.Time .Time}}</td><td>{{.Op}}</td><td><code>{{if .Key}}{{.Key}}{{else}}(hidden){{end}}</code></td><td>{{.Name}}</td><td class="err"><code>{{.Error}}</code></td></tr>
{{else}}<tr><td colspan="5" class="empty">none</td></tr>{{end}}
</tbody></table>

{{if .InspectEnabled}}<h2 id="inspect">Who holds a key (cluster-wide)</h2>
<form method="get"><input type="text" name="inspect" maxlength="{{.MaxKeyLen}}" placeholder="key" required> <button type="submit">Inspect</button></form>
{{with .Inspect}}<table><tbody>
<tr><th>key</th><td><code>{{if .Key}}{{.Key}}{{else}}(hidden){{end}}</code></td></tr>
{{if .Error}}<tr><th>error</th><td class="err"><code>{{.Error}}</code></td></tr>
{{else if .Held}}<tr><th>owner</th><td><code>{{.Owner}}</code></td></tr><tr><th>token</th><td>{{.Token}}</td></tr><tr><th>TTL</th><td>{{dur .TTL}}</td></tr><tr><th>metadata</th><td><code>{{.Metadata}}</code></td></tr>
{{else}}<tr><th>holder</th><td class="empty">free</td></tr>{{end}}
</tbody></table>
<p class="meta"><a href="?">back to the live view</a></p>{{end}}
{{end}}
</body></html>
`))
