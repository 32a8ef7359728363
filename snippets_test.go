package lockkit_test

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var update = flag.Bool("update", false, "rewrite the Go snippets of README.md and docs/*.md from their sources")

// The Go code of README.md and docs/*.md is not written there: each ```go
// block is the body of a function that `go test` compiles and runs (an
// Example with an output comment, a Test, or a function of a program its
// test runs), named by an HTML comment on the line above the block:
//
//	<!-- snippet: ginlock/example_test.go ExampleNew -->
//
// TestSnippets fails when a block differs from its function's body, so a
// renamed API fails the function's own build and cannot survive in a
// snippet. `go test -run TestSnippets . -update` rewrites the blocks.
func TestSnippets(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	src := newSources(".")
	blocks := 0
	for _, name := range append([]string{"README.md"}, docs...) {
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		out, n, problems := checkSnippets(name, string(text), src)
		blocks += n
		if *update && out != string(text) {
			if err := os.WriteFile(name, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: snippets rewritten", name)
		}
		for _, p := range problems {
			if *update && strings.Contains(p, "differs from") {
				continue
			}
			t.Error(p)
		}
	}
	if blocks == 0 {
		t.Error("no Go snippet found in README.md and docs/*.md")
	}
}

// A snippet edited by hand, a Go block without its marker, a marker whose
// function is gone or does not run: each is reported.
func TestSnippetsCatchMistakes(t *testing.T) {
	src := newSources(".")
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	good := string(readme)
	if _, n, problems := checkSnippets("README.md", good, src); len(problems) > 0 || n == 0 {
		t.Fatalf("README.md: %d snippets, problems %q", n, problems)
	}
	start := strings.Index(good, "```go\n")
	if start < 0 {
		t.Fatal("README.md has no Go snippet")
	}
	marker := good[strings.LastIndex(good[:start-1], "\n")+1 : start]

	for _, c := range []struct{ name, text, want string }{
		{"hand edit", good[:start+6] + "\t// edited by hand\n" + good[start+6:], "differs from"},
		{"no marker", strings.Replace(good, marker, "", 1), "has no snippet marker"},
		{"function gone", strings.Replace(good, marker, "<!-- snippet: core/example_test.go ExampleGone -->\n", 1), "no function ExampleGone"},
		{"file gone", strings.Replace(good, marker, "<!-- snippet: core/gone_test.go Example -->\n", 1), "gone_test.go"},
		{"example that does not run", strings.Replace(good, marker, "<!-- snippet: grpclock/example_test.go ExampleField -->\n", 1), "no output comment"},
		{"marker without a block", good + "\n<!-- snippet: core/example_test.go Example -->\ntext\n", "not followed by a ```go block"},
	} {
		_, _, problems := checkSnippets("README.md", c.text, src)
		if !strings.Contains(strings.Join(problems, "\n"), c.want) {
			t.Errorf("%s: problems %q, want one saying %q", c.name, problems, c.want)
		}
	}

	fixed, _, _ := checkSnippets("README.md", good[:start+6]+"\t// edited by hand\n"+good[start+6:], src)
	if fixed != good {
		t.Error("-update does not restore the edited snippet")
	}
}

const markerPrefix = "<!-- snippet: "

// checkSnippets checks the Go blocks of the Markdown text (from file
// name) against their sources. It returns the text with every block
// rewritten from its source, the number of Go blocks, and the problems.
func checkSnippets(name, text string, src *sources) (string, int, []string) {
	lines := strings.SplitAfter(text, "\n")
	var out strings.Builder
	var problems []string
	blocks := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		out.WriteString(line)
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, markerPrefix) {
			next := ""
			if i+1 < len(lines) {
				next = strings.TrimSpace(lines[i+1])
			}
			if next != "```go" {
				problems = append(problems, fmt.Sprintf("%s:%d: snippet marker not followed by a ```go block", name, i+1))
			}
			continue
		}
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		// The block's body: up to the closing fence.
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if trimmed != "```go" {
			for _, l := range lines[i+1 : min(end+1, len(lines))] {
				out.WriteString(l)
			}
			i = end
			continue
		}
		blocks++
		body := lines[i+1 : end]
		var prev string
		if i > 0 {
			prev = strings.TrimSpace(lines[i-1])
		}
		want, problem := "", ""
		if !strings.HasPrefix(prev, markerPrefix) {
			problem = fmt.Sprintf("%s:%d: ```go block has no snippet marker (%sFILE FUNC --> on the line above)", name, i+1, markerPrefix)
		} else {
			want, problem = src.body(strings.TrimSuffix(strings.TrimPrefix(prev, markerPrefix), "-->"))
			if problem != "" {
				problem = fmt.Sprintf("%s:%d: %s", name, i, problem)
			}
		}
		got := strings.Join(body, "")
		if problem == "" {
			var re strings.Builder
			for _, l := range strings.SplitAfter(want, "\n") {
				if strings.TrimSpace(l) != "" {
					re.WriteString(indent)
				}
				re.WriteString(l)
			}
			re.WriteString("\n")
			if got != re.String() {
				problem = fmt.Sprintf("%s:%d: snippet differs from %s (go test -run TestSnippets . -update rewrites it)", name, i+1, strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(prev, markerPrefix), "-->")))
				got = re.String()
			}
		}
		if problem != "" {
			problems = append(problems, problem)
		}
		out.WriteString(got)
		if end < len(lines) {
			out.WriteString(lines[end])
		}
		i = end
	}
	return out.String(), blocks, problems
}

// sources reads and parses the Go files snippets name, once each.
type sources struct {
	root  string
	files map[string]*parsed
}

type parsed struct {
	src  []byte
	fset *token.FileSet
	file *ast.File
	err  error
}

func newSources(root string) *sources { return &sources{root: root, files: map[string]*parsed{}} }

// body returns the dedented body of the function a marker names ("FILE
// FUNC", FUNC a function or Type.Method), or the problem.
func (s *sources) body(ref string) (string, string) {
	path, fn, ok := strings.Cut(strings.TrimSpace(ref), " ")
	fn = strings.TrimSpace(fn)
	if !ok || fn == "" {
		return "", fmt.Sprintf("snippet marker %q: want FILE FUNC", ref)
	}
	p := s.files[path]
	if p == nil {
		p = &parsed{fset: token.NewFileSet()}
		p.src, p.err = os.ReadFile(filepath.Join(s.root, path))
		if p.err == nil {
			p.file, p.err = parser.ParseFile(p.fset, path, p.src, parser.ParseComments)
		}
		s.files[path] = p
	}
	if p.err != nil {
		return "", fmt.Sprintf("snippet source: %v", p.err)
	}
	if !strings.HasSuffix(path, "_test.go") {
		tests, _ := filepath.Glob(filepath.Join(s.root, filepath.Dir(path), "*_test.go"))
		if len(tests) == 0 {
			return "", fmt.Sprintf("snippet source %s: its package has no test that runs it", path)
		}
	}
	recv, name, isMethod := strings.Cut(fn, ".")
	if !isMethod {
		name, recv = recv, ""
	}
	for _, d := range p.file.Decls {
		f, ok := d.(*ast.FuncDecl)
		if !ok || f.Name.Name != name || f.Body == nil || receiver(f) != recv {
			continue
		}
		lb, rb := p.fset.Position(f.Body.Lbrace).Offset, p.fset.Position(f.Body.Rbrace).Offset
		body := string(p.src[lb+1 : rb])
		if strings.HasPrefix(name, "Example") && !hasOutput(body) {
			return "", fmt.Sprintf("snippet source %s %s: an Example with no output comment is compiled but never run", path, fn)
		}
		return dedent(body), ""
	}
	return "", fmt.Sprintf("snippet source %s: no function %s", path, fn)
}

func receiver(f *ast.FuncDecl) string {
	if f.Recv == nil || len(f.Recv.List) == 0 {
		return ""
	}
	t := f.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

func hasOutput(body string) bool {
	return strings.Contains(body, "// Output:") || strings.Contains(body, "// Unordered output:")
}

// dedent drops the blank first and last lines of a function body and the
// indentation its lines share.
func dedent(body string) string {
	lines := strings.Split(strings.Trim(body, "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	common := -1 // the shortest indentation of a line with text
	for _, l := range lines {
		if n := len(l) - len(strings.TrimLeft(l, "\t ")); strings.TrimSpace(l) != "" && (common < 0 || n < common) {
			common = n
		}
	}
	var b bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.TrimSpace(l) != "" {
			l = l[common:]
		}
		b.WriteString(strings.TrimRight(l, " \t"))
	}
	return b.String()
}

// Every page of docs/ is in the README's map, and every relative link of
// README.md and docs/*.md leads to a file that exists and, with a
// #fragment, to one of its headings.
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !strings.Contains(string(readme), "]("+d+")") {
			t.Errorf("README.md does not link %s", d)
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, name := range append([]string{"README.md"}, docs...) {
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := name
			if path != "" {
				file = filepath.Join(filepath.Dir(name), path)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: link %s: %v", name, target, err)
				continue
			}
			if frag != "" && !hasHeading(t, file, frag) {
				t.Errorf("%s: link %s: no heading #%s in %s", name, target, frag, file)
			}
		}
	}
}

// hasHeading reports whether the Markdown file has a heading whose GitHub
// anchor is frag.
func hasHeading(t *testing.T, file, frag string) bool {
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		if b.String() == frag {
			return true
		}
	}
	return false
}

// The README's install line gets this module and imports packages of it:
// `go get` names go.mod's module path, and each import path it names is a
// directory of the module with Go code that is not only tests.
func TestInstallLine(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module, _, _ := strings.Cut(strings.TrimPrefix(string(gomod), "module "), "\n")
	var line string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "Install: ") {
			line = l
		}
	}
	if !strings.Contains(line, "`go get "+module+"`") {
		t.Fatalf("README.md has no line \"Install: `go get %s`...\": %q", module, line)
	}
	imports := regexp.MustCompile("`"+regexp.QuoteMeta(module)+"/([a-z0-9/]+)`").FindAllStringSubmatch(line, -1)
	if len(imports) == 0 {
		t.Errorf("the install line names no package to import: %q", line)
	}
	for _, m := range imports {
		files, _ := filepath.Glob(filepath.Join(m[1], "*.go"))
		tests, _ := filepath.Glob(filepath.Join(m[1], "*_test.go"))
		if len(files) == len(tests) {
			t.Errorf("the install line imports %s/%s: no such package in the module", module, m[1])
		}
	}
}
