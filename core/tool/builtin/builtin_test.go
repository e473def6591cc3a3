package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/tool"
)

// The test binary doubles as a helper program for run_command.
const helperEnv = "BUILTIN_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "combined":
		fmt.Fprint(os.Stdout, "to stdout\n")
		fmt.Fprint(os.Stderr, "to stderr\n")
		os.Exit(3)
	case "spawn": // leave a child holding the output pipe, and exit
		c := exec.Command("sleep", "10")
		c.Stdout = os.Stdout
		if err := c.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("spawned")
		tellPid(c.Process.Pid)
		os.Exit(0)
	case "spawn-wait": // start a child and wait for it
		c := exec.Command("sleep", "10")
		c.Stdout = os.Stdout
		fmt.Println("spawned")
		if err := c.Start(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		tellPid(c.Process.Pid)
		_ = c.Wait()
		os.Exit(0)
	default:
		os.Exit(100)
	}
}

// tellPid writes pid to the FIFO $HELPER_PID names, when it does: the
// test learns the child's pid, and that the helper got that far.
func tellPid(pid int) {
	if p := os.Getenv("HELPER_PID"); p != "" {
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			fmt.Fprintln(f, pid)
			f.Close()
		}
	}
}

// env is a test project: its root (symlinks resolved) and its tools.
type env struct {
	root  string
	tools map[string]tool.Tool
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newEnvAt(t, root, opts)
}

func newEnvAt(t *testing.T, root string, opts Options) *env {
	t.Helper()
	tools, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{root: root, tools: map[string]tool.Tool{}}
	for _, tl := range tools {
		e.tools[tl.Spec().Name] = tl
	}
	return e
}

func (e *env) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(e.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (e *env) run(t *testing.T, name string, args any) tool.Result {
	t.Helper()
	return e.runCtx(t, context.Background(), name, args)
}

func (e *env) runCtx(t *testing.T, ctx context.Context, name string, args any) tool.Result {
	t.Helper()
	tl, ok := e.tools[name]
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	return tl.Run(ctx, json.RawMessage(raw))
}

type m = map[string]any

// helperEnvFor is the environment that makes the test binary the helper
// mode. GOCOVERDIR keeps a coverage build from warning on exit.
func helperEnvFor(t *testing.T, mode string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), helperEnv + "=" + mode, "GOCOVERDIR=" + t.TempDir()}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"relative/dir", filepath.Join(dir, "missing"), file} {
		if _, err := New(root, Options{}); err == nil {
			t.Errorf("New(%q) succeeded", root)
		}
	}

	tools, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Spec().Name)
	}
	want := []string{"read_file", "list_files", "search", "write_file", "edit_file", "run_command"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	if _, err := tool.NewRegistry(tools...); err != nil {
		t.Fatal(err)
	}
	mutating := map[string]bool{"write_file": true, "edit_file": true, "run_command": true}
	for _, tl := range tools {
		sp := tl.Spec()
		mu, isMutator := tl.(tool.Mutator)
		if got := isMutator && mu.Mutating(); got != mutating[sp.Name] {
			t.Errorf("%s: mutating %v", sp.Name, got)
		}
		if sp.Description == "" {
			t.Errorf("%s: no description", sp.Name)
		}
		var schema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(sp.Schema, &schema); err != nil {
			t.Errorf("%s: schema: %v", sp.Name, err)
			continue
		}
		if schema.Type != "object" || len(schema.Properties) == 0 || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema %s", sp.Name, sp.Schema)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", sp.Name, r)
			}
		}
		// Every tool names a missing required argument.
		if len(schema.Required) > 0 {
			res := tl.Run(context.Background(), json.RawMessage(`{}`))
			if res.OK || !strings.Contains(res.Output, strconv.Quote(schema.Required[0])) {
				t.Errorf("%s with no arguments: %+v", sp.Name, res)
			}
		}
		// And an unknown one.
		res := tl.Run(context.Background(), json.RawMessage(`{"bogus": 1}`))
		if res.OK || !strings.Contains(res.Output, `"bogus"`) {
			t.Errorf("%s with an unknown argument: %+v", sp.Name, res)
		}
	}
}

func TestRootThroughSymlink(t *testing.T) {
	real, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := newEnvAt(t, link, Options{})
	if e.tools["read_file"].(readFile).p.root != real {
		t.Fatalf("root not resolved: %s", e.tools["read_file"].(readFile).p.root)
	}
	if err := os.WriteFile(filepath.Join(real, "a.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.txt", filepath.Join(link, "a.txt"), filepath.Join(real, "a.txt")} {
		if res := e.run(t, "read_file", m{"path": p}); !res.OK || res.Output != "     1\tx\n" {
			t.Errorf("read %s: %+v", p, res)
		}
	}
}

func TestReadFile(t *testing.T) {
	e := newEnv(t, Options{})
	e.write(t, "a.txt", "alpha\nbeta\ngamma\n")
	e.write(t, "nonl.txt", "one\ntwo")
	e.write(t, "empty.txt", "")
	e.write(t, "bin.dat", "abc\x00def")
	e.write(t, "dir/x", "")
	tests := []struct {
		name string
		args any
		ok   bool
		out  string // exact output when ok, a fragment otherwise
	}{
		{"whole", m{"path": "a.txt"}, true, "     1\talpha\n     2\tbeta\n     3\tgamma\n"},
		{"offset", m{"path": "a.txt", "offset": 2}, true, "     2\tbeta\n     3\tgamma\n"},
		{"offset and limit", m{"path": "a.txt", "offset": 2, "limit": 1}, true, "     2\tbeta\n"},
		{"limit past the end", m{"path": "a.txt", "limit": 10}, true, "     1\talpha\n     2\tbeta\n     3\tgamma\n"},
		{"offset 0 is the start", m{"path": "a.txt", "offset": 0, "limit": 1}, true, "     1\talpha\n"},
		{"last line", m{"path": "a.txt", "offset": 3}, true, "     3\tgamma\n"},
		{"no final newline", m{"path": "nonl.txt"}, true, "     1\tone\n     2\ttwo\n"},
		{"empty file", m{"path": "empty.txt"}, true, "(empty file)"},
		{"dot segments", m{"path": "dir/../a.txt", "limit": 1}, true, "     1\talpha\n"},
		{"offset past the end", m{"path": "a.txt", "offset": 4}, false, "offset 4 is past the end of a.txt (3 lines)"},
		{"negative limit", m{"path": "a.txt", "limit": -1}, false, `"limit"`},
		{"missing path", m{}, false, `missing required argument "path"`},
		{"path not a string", m{"path": 7}, false, `argument "path" must be a string, not number`},
		{"offset not an integer", m{"path": "a.txt", "offset": "2"}, false, `argument "offset" must be an integer, not string`},
		{"offset a fraction", m{"path": "a.txt", "offset": 1.5}, false, `"offset"`},
		{"unknown argument", m{"path": "a.txt", "lines": 3}, false, `unknown argument "lines"`},
		{"not an object", `[1]`, false, "must be a JSON object"},
		{"bad JSON", `{"path":`, false, "not valid JSON"},
		{"missing file", m{"path": "nope.txt"}, false, "nope.txt does not exist"},
		{"directory", m{"path": "dir"}, false, "dir is a directory"},
		{"binary", m{"path": "bin.dat"}, false, "bin.dat is a binary file (7 bytes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.run(t, "read_file", tc.args)
			checkResult(t, res, tc.ok, tc.out)
		})
	}
}

func checkResult(t *testing.T, res tool.Result, ok bool, out string) {
	t.Helper()
	if res.OK != ok {
		t.Fatalf("OK %v, want %v; output %q", res.OK, ok, res.Output)
	}
	if ok && res.Output != out {
		t.Fatalf("output\n%q\nwant\n%q", res.Output, out)
	}
	if !ok && !strings.Contains(res.Output, out) {
		t.Fatalf("output %q does not contain %q", res.Output, out)
	}
}

func TestReadFileCap(t *testing.T) {
	e := newEnv(t, Options{OutputCap: 40})
	var lines strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	e.write(t, "ten.txt", lines.String())
	e.write(t, "long.txt", strings.Repeat("x", 100)+"\nshort\n")
	e.write(t, "utf8.txt", strings.Repeat("é", 50)+"\n")
	tests := []struct {
		name string
		args m
		out  string
	}{
		// Nine 14-byte lines and one of 15: 141 bytes; two fit in 40.
		{"lines", m{"path": "ten.txt"},
			"     1\tline 1\n     2\tline 2\n[output cut: 141 bytes, showing the first 28; continue with offset=3]"},
		{"continued", m{"path": "ten.txt", "offset": 3, "limit": 3},
			"     3\tline 3\n     4\tline 4\n[output cut: 42 bytes, showing the first 28; continue with offset=5]"},
		{"fits", m{"path": "ten.txt", "offset": 9},
			"     9\tline 9\n    10\tline 10\n"},
		// 7+100+1 bytes, then 13: the long line is shown cut.
		{"a line over the cap", m{"path": "long.txt"},
			"     1\t" + strings.Repeat("x", 33) + "\n[output cut: 121 bytes, showing the first 40; line 1 alone is longer than the cap; continue with offset=2]"},
		// 33 bytes of room hold 16 two-byte characters, not 16.5.
		{"no split character", m{"path": "utf8.txt"},
			"     1\t" + strings.Repeat("é", 16) + "\n[output cut: 108 bytes, showing the first 39; line 1 alone is longer than the cap; continue with offset=2]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkResult(t, e.run(t, "read_file", tc.args), true, tc.out)
		})
	}
}

// fixture is a small tree for list_files and search.
func fixture(t *testing.T, opts Options) *env {
	e := newEnv(t, opts)
	e.write(t, ".git/HEAD", "hello git\n")
	e.write(t, "a.txt", "hello world\nbye\n")
	e.write(t, "b.go", "package b\n// hello\n")
	e.write(t, "bin.dat", "hello\x00")
	e.write(t, "sub/c.go", "package sub\nfunc Hello() {}\n")
	e.write(t, "sub/deep/d.txt", "nothing\n")
	e.write(t, "sub/deep/e.go", "package deep\n")
	if err := os.MkdirAll(filepath.Join(e.root, "sub/empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestListFiles(t *testing.T) {
	e := fixture(t, Options{})
	lines := func(s ...string) string { return strings.Join(s, "\n") + "\n" }
	tests := []struct {
		name string
		args m
		ok   bool
		out  string
	}{
		{"everything", m{}, true, lines("a.txt", "b.go", "bin.dat", "sub/", "sub/c.go", "sub/deep/", "sub/deep/d.txt", "sub/deep/e.go", "sub/empty/")},
		{"all glob", m{"pattern": "**/*"}, true, lines("a.txt", "b.go", "bin.dat", "sub/", "sub/c.go", "sub/deep/", "sub/deep/d.txt", "sub/deep/e.go", "sub/empty/")},
		{"name at any depth", m{"pattern": "*.go"}, true, lines("b.go", "sub/c.go", "sub/deep/e.go")},
		{"anchored", m{"pattern": "sub/*.go"}, true, lines("sub/c.go")},
		{"double star", m{"pattern": "**/*.txt"}, true, lines("a.txt", "sub/deep/d.txt")},
		{"double star middle", m{"pattern": "sub/**/*.go"}, true, lines("sub/c.go", "sub/deep/e.go")},
		{"braces", m{"pattern": "*.{go,txt}"}, true, lines("a.txt", "b.go", "sub/c.go", "sub/deep/d.txt", "sub/deep/e.go")},
		{"directories only", m{"pattern": "*/"}, true, lines("sub/", "sub/deep/", "sub/empty/")},
		{"under a directory", m{"path": "sub"}, true, lines("sub/c.go", "sub/deep/", "sub/deep/d.txt", "sub/deep/e.go", "sub/empty/")},
		{"pattern relative to path", m{"path": "sub", "pattern": "deep/*"}, true, lines("sub/deep/d.txt", "sub/deep/e.go")},
		{"a file", m{"path": "a.txt"}, true, lines("a.txt")},
		{"empty directory", m{"path": "sub/empty"}, true, "(no matches)"},
		{"no match", m{"pattern": "*.rs"}, true, "(no matches)"},
		{"bad glob", m{"pattern": "[a"}, false, `argument "pattern"`},
		{"missing directory", m{"path": "nope"}, false, "nope does not exist"},
		{"pattern not a string", m{"pattern": true}, false, `argument "pattern" must be a string`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkResult(t, e.run(t, "list_files", tc.args), tc.ok, tc.out)
		})
	}
}

func TestListFilesCap(t *testing.T) {
	e := newEnv(t, Options{OutputCap: 20})
	for i := range 10 {
		e.write(t, fmt.Sprintf("f%d.txt", i), "")
	}
	// Ten 7-byte lines; two fit in 20.
	checkResult(t, e.run(t, "list_files", m{}), true, "f0.txt\nf1.txt\n[output cut: 70 bytes, showing the first 14]")
}

func TestSearch(t *testing.T) {
	e := fixture(t, Options{})
	if err := os.Symlink("a.txt", filepath.Join(e.root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args m
		ok   bool
		out  string
	}{
		{"plain", m{"pattern": "hello"}, true, "a.txt:1: hello world\nb.go:2: // hello\n"},
		{"case-insensitive", m{"pattern": "(?i)hello"}, true, "a.txt:1: hello world\nb.go:2: // hello\nsub/c.go:2: func Hello() {}\n"},
		{"glob", m{"pattern": "^package", "glob": "*.go"}, true, "b.go:1: package b\nsub/c.go:1: package sub\nsub/deep/e.go:1: package deep\n"},
		{"anchored glob", m{"pattern": "^package", "glob": "sub/*.go"}, true, "sub/c.go:1: package sub\n"},
		{"under a directory", m{"pattern": "(?i)hello|package", "path": "sub/deep"}, true, "sub/deep/e.go:1: package deep\n"},
		{"glob relative to path", m{"pattern": ".", "path": "sub", "glob": "deep/*.txt"}, true, "sub/deep/d.txt:1: nothing\n"},
		{"one file", m{"pattern": "bye", "path": "a.txt"}, true, "a.txt:2: bye\n"},
		{"no matches", m{"pattern": "zebra"}, true, "(no matches)"},
		{"bad regexp", m{"pattern": "("}, false, `argument "pattern" is not a valid regular expression`},
		{"missing pattern", m{"path": "sub"}, false, `missing required argument "pattern"`},
		{"bad glob", m{"pattern": "x", "glob": "[x"}, false, `argument "glob"`},
		{"missing path", m{"pattern": "x", "path": "nope"}, false, "nope does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkResult(t, e.run(t, "search", tc.args), tc.ok, tc.out)
		})
	}
}

func TestSearchCaps(t *testing.T) {
	e := newEnv(t, Options{OutputCap: 30})
	e.write(t, "a.txt", "x1\nx2\nx3\nx4\nx5\nx6\n")
	e.write(t, "long.txt", strings.Repeat("y", 600)+"\n")
	// Six 10-byte lines ("a.txt:1: x1\n" is 12): two fit in 30.
	checkResult(t, e.run(t, "search", m{"pattern": "x"}), true, "a.txt:1: x1\na.txt:2: x2\n[output cut: 72 bytes, showing the first 24]")

	e2 := newEnv(t, Options{})
	e2.write(t, "long.txt", strings.Repeat("y", 600)+"\n")
	checkResult(t, e2.run(t, "search", m{"pattern": "y"}), true, "long.txt:1: "+strings.Repeat("y", 500)+" [line cut]\n")
}

// TestConfinement sends every tool paths that escape the root.
func TestConfinement(t *testing.T) {
	e := newEnv(t, Options{})
	e.write(t, "a.txt", "a\n")
	e.write(t, "sub/b.txt", "b\n")
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"linkfile":      secret,
		"linkdir":       outside,
		"sub/relout":    "../../" + filepath.Base(outside),
		"dangling":      filepath.Join(outside, "new.txt"),
		"chain":         "linkdir",
		"inside":        "a.txt",
		"sub/insidedir": "..",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(e.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	escapes := []string{
		"..",
		"../x.txt",
		"sub/../../x.txt",
		secret,
		filepath.Join(outside, "new.txt"),
		"/",
		"linkfile",
		"linkdir",
		"linkdir/secret.txt",
		"linkdir/new/deeper/new.txt",
		"chain/secret.txt",
		"sub/relout/secret.txt",
		"dangling",
	}
	calls := map[string]func(p string) m{
		"read_file":   func(p string) m { return m{"path": p} },
		"list_files":  func(p string) m { return m{"path": p} },
		"search":      func(p string) m { return m{"pattern": "a", "path": p} },
		"write_file":  func(p string) m { return m{"path": p, "content": "pwned\n"} },
		"edit_file":   func(p string) m { return m{"path": p, "old_string": "a", "new_string": "pwned"} },
		"run_command": func(p string) m { return m{"argv": []string{"true"}, "cwd": p} },
	}
	for name, call := range calls {
		for _, p := range escapes {
			t.Run(name+"/"+p, func(t *testing.T) {
				res := e.run(t, name, call(p))
				if res.OK || !strings.Contains(res.Output, strconv.Quote(p)) || !strings.Contains(res.Output, "outside the project directory") {
					t.Errorf("%+v", res)
				}
				if len(res.Diffs) > 0 {
					t.Errorf("diffs %+v", res.Diffs)
				}
			})
		}
	}
	// Nothing outside changed.
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "secret.txt" {
		t.Errorf("outside now holds %v", entries)
	}
	if data, _ := os.ReadFile(secret); string(data) != "secret a\n" {
		t.Errorf("secret now %q", data)
	}

	// Paths that stay inside are fine, links included.
	inside := []struct {
		path string
		out  string
	}{
		{filepath.Join(e.root, "a.txt"), "     1\ta\n"},
		{"inside", "     1\ta\n"},
		{"sub/insidedir/a.txt", "     1\ta\n"},
		{"./sub/../a.txt", "     1\ta\n"},
		{"sub/b.txt", "     1\tb\n"},
	}
	for _, tc := range inside {
		checkResult(t, e.run(t, "read_file", m{"path": tc.path}), true, tc.out)
	}
	// Listing and searching do not follow links out.
	checkResult(t, e.run(t, "search", m{"pattern": "secret"}), true, "(no matches)")
	res := e.run(t, "list_files", m{})
	if !res.OK || strings.Contains(res.Output, "secret") {
		t.Errorf("list_files: %+v", res)
	}
	// Writing through a link inside the root writes its target.
	res = e.run(t, "write_file", m{"path": "inside", "content": "A\n"})
	if !res.OK || e.read(t, "a.txt") != "A\n" || len(res.Diffs) != 1 || res.Diffs[0].Path != "a.txt" {
		t.Errorf("write through inside link: %+v", res)
	}
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t, Options{})
	res := e.run(t, "write_file", m{"path": "dir/sub/new.txt", "content": "one\ntwo\n"})
	wantDiff := tool.FileDiff{
		Path:    "dir/sub/new.txt",
		Unified: "--- /dev/null\n+++ b/dir/sub/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n",
		Added:   2,
	}
	if !res.OK || res.Output != "created dir/sub/new.txt (8 bytes, +2 -0 lines)" || !reflect.DeepEqual(res.Diffs, []tool.FileDiff{wantDiff}) {
		t.Fatalf("create: %+v", res)
	}
	if got := e.read(t, "dir/sub/new.txt"); got != "one\ntwo\n" {
		t.Fatalf("content %q", got)
	}

	if err := os.Chmod(filepath.Join(e.root, "dir/sub/new.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	res = e.run(t, "write_file", m{"path": "dir/sub/new.txt", "content": "one\nTWO\nthree\n"})
	wantDiff = tool.FileDiff{
		Path:    "dir/sub/new.txt",
		Unified: "--- a/dir/sub/new.txt\n+++ b/dir/sub/new.txt\n@@ -1,2 +1,3 @@\n one\n-two\n+TWO\n+three\n",
		Added:   2,
		Removed: 1,
	}
	if !res.OK || res.Output != "wrote dir/sub/new.txt (14 bytes, +2 -1 lines)" || !reflect.DeepEqual(res.Diffs, []tool.FileDiff{wantDiff}) {
		t.Fatalf("overwrite: %+v", res)
	}
	if st, err := os.Stat(filepath.Join(e.root, "dir/sub/new.txt")); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("mode not kept: %v %v", st.Mode(), err)
	}

	res = e.run(t, "write_file", m{"path": "dir/sub/new.txt", "content": "one\nTWO\nthree\n"})
	if !res.OK || res.Diffs != nil || !strings.Contains(res.Output, "unchanged") {
		t.Fatalf("same content: %+v", res)
	}

	res = e.run(t, "write_file", m{"path": "empty.txt", "content": ""})
	if !res.OK || len(res.Diffs) != 1 || res.Diffs[0].Unified != "--- /dev/null\n+++ b/empty.txt\n" || e.read(t, "empty.txt") != "" {
		t.Fatalf("empty file: %+v", res)
	}

	for _, tc := range []struct {
		name string
		args m
		msg  string
	}{
		{"directory", m{"path": "dir", "content": "x"}, "dir is a directory"},
		{"under a file", m{"path": "empty.txt/x", "content": "x"}, "empty.txt/x"},
		{"missing content", m{"path": "x.txt"}, `missing required argument "content"`},
		{"content not a string", m{"path": "x.txt", "content": []int{1}}, `argument "content" must be a string`},
		{"missing path", m{"content": "x"}, `missing required argument "path"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkResult(t, e.run(t, "write_file", tc.args), false, tc.msg)
		})
	}
}

func TestEditFile(t *testing.T) {
	const orig = "a\nb\na\nc\n"
	tests := []struct {
		name    string
		args    m
		ok      bool
		out     string // exact when ok, a fragment otherwise
		content string // the file afterwards
		diff    string
		added   int
		removed int
	}{
		{name: "unique", args: m{"old_string": "b", "new_string": "B"}, ok: true,
			out: "edited f.txt: replaced 1 occurrence (+1 -1 lines)", content: "a\nB\na\nc\n",
			diff: "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n a\n c\n", added: 1, removed: 1},
		{name: "multi-line", args: m{"old_string": "b\na\n", "new_string": ""}, ok: true,
			out: "edited f.txt: replaced 1 occurrence (+0 -2 lines)", content: "a\nc\n",
			diff: "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,2 @@\n a\n-b\n-a\n c\n", removed: 2},
		{name: "replace all", args: m{"old_string": "a", "new_string": "x", "replace_all": true}, ok: true,
			out: "edited f.txt: replaced 2 occurrences (+2 -2 lines)", content: "x\nb\nx\nc\n",
			diff: "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n-a\n+x\n b\n-a\n+x\n c\n", added: 2, removed: 2},
		{name: "replace all of one", args: m{"old_string": "c", "new_string": "C", "replace_all": true}, ok: true,
			out: "edited f.txt: replaced 1 occurrence (+1 -1 lines)", content: "a\nb\na\nC\n",
			diff: "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n a\n b\n a\n-c\n+C\n", added: 1, removed: 1},
		{name: "ambiguous", args: m{"old_string": "a", "new_string": "x"}, out: "old_string occurs 2 times in f.txt", content: orig},
		{name: "not found", args: m{"old_string": "zzz", "new_string": "x"}, out: "old_string was not found in f.txt", content: orig},
		{name: "empty old", args: m{"old_string": "", "new_string": "x"}, out: `argument "old_string" is empty`, content: orig},
		{name: "same", args: m{"old_string": "b", "new_string": "b"}, out: "the same", content: orig},
		{name: "missing new", args: m{"old_string": "b"}, out: `missing required argument "new_string"`, content: orig},
		{name: "replace_all not a boolean", args: m{"old_string": "a", "new_string": "x", "replace_all": "yes"}, out: `argument "replace_all" must be a boolean, not string`, content: orig},
		{name: "missing file", args: m{"path": "nope.txt", "old_string": "a", "new_string": "x"}, out: "nope.txt does not exist", content: orig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			e.write(t, "f.txt", orig)
			if _, ok := tc.args["path"]; !ok {
				tc.args["path"] = "f.txt"
			}
			res := e.run(t, "edit_file", tc.args)
			checkResult(t, res, tc.ok, tc.out)
			if got := e.read(t, "f.txt"); got != tc.content {
				t.Errorf("content %q, want %q", got, tc.content)
			}
			var want []tool.FileDiff
			if tc.ok {
				want = []tool.FileDiff{{Path: "f.txt", Unified: tc.diff, Added: tc.added, Removed: tc.removed}}
			}
			if !reflect.DeepEqual(res.Diffs, want) {
				t.Errorf("diffs %+v\nwant %+v", res.Diffs, want)
			}
		})
	}
}

func TestRunCommand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENMAX_BUILTIN_TEST_SECRET", "hunter2")
	e := newEnv(t, Options{})
	e.write(t, "sub/f.txt", "")
	if err := os.Symlink(t.TempDir(), filepath.Join(e.root, "out")); err != nil {
		t.Fatal(err)
	}
	e.write(t, "script.sh", "#!/bin/sh\necho from script\n")
	if err := os.Chmod(filepath.Join(e.root, "script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	helper := func(mode string) *env {
		return newEnvAt(t, e.root, Options{Env: helperEnvFor(t, mode)})
	}
	tests := []struct {
		name string
		env  *env
		args m
		ok   bool
		out  string
	}{
		{"echo", e, m{"argv": []string{"echo", "hi"}}, true, "hi\n[exit code: 0]"},
		{"no output", e, m{"argv": []string{"true"}}, true, "[exit code: 0]"},
		{"nonzero exit", e, m{"argv": []string{"false"}}, false, "[exit code: 1]"},
		{"stdout and stderr", helper("combined"), m{"argv": []string{exe}}, false, "to stdout\nto stderr\n[exit code: 3]"},
		{"cwd", e, m{"argv": []string{"pwd"}, "cwd": "sub"}, true, filepath.Join(e.root, "sub") + "\n[exit code: 0]"},
		{"default cwd", e, m{"argv": []string{"pwd"}}, true, e.root + "\n[exit code: 0]"},
		{"program relative to cwd", e, m{"argv": []string{"./script.sh"}}, true, "from script\n[exit code: 0]"},
		{"cwd a file", e, m{"argv": []string{"true"}, "cwd": "sub/f.txt"}, false, "sub/f.txt is not a directory"},
		{"cwd missing", e, m{"argv": []string{"true"}, "cwd": "nope"}, false, "nope does not exist"},
		{"cwd outside", e, m{"argv": []string{"true"}, "cwd": "../"}, false, `path "../" is outside the project directory`},
		{"cwd through a link outside", e, m{"argv": []string{"true"}, "cwd": "out"}, false, `path "out" resolves through a symbolic link`},
		{"not found", e, m{"argv": []string{"no-such-program-xyz"}}, false, "command not found: no-such-program-xyz"},
		{"missing argv", e, m{"cwd": "sub"}, false, `missing required argument "argv"`},
		{"empty argv", e, m{"argv": []string{}}, false, `missing required argument "argv"`},
		{"argv a string", e, m{"argv": "echo hi"}, false, `argument "argv" must be an array of strings, not string`},
		{"argv of numbers", e, m{"argv": []int{1}}, false, `argument "argv"`},
		{"empty program", e, m{"argv": []string{""}}, false, "argv[0]"},
		{"bad timeout", e, m{"argv": []string{"true"}, "timeout_ms": 0}, false, `argument "timeout_ms" must be at least 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkResult(t, tc.env.run(t, "run_command", tc.args), tc.ok, tc.out)
		})
	}

	t.Run("env", func(t *testing.T) {
		res := e.run(t, "run_command", m{"argv": []string{"env"}})
		if !res.OK || strings.Contains(res.Output, "OPENMAX_BUILTIN_TEST_SECRET") || strings.Contains(res.Output, "hunter2") {
			t.Fatalf("the parent's environment leaked: %q", res.Output)
		}
		got := strings.Split(strings.TrimSuffix(res.Output, "\n[exit code: 0]"), "\n")
		slices.Sort(got)
		want := append(MinimalEnv(), "PWD="+e.root, AgentSpawnedEnv+"=1")
		slices.Sort(want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("env %q, want %q", got, want)
		}
	})
	t.Run("own env", func(t *testing.T) {
		own := newEnvAt(t, e.root, Options{Env: []string{"PATH=" + os.Getenv("PATH"), "FOO=bar", "PWD=/elsewhere"}})
		res := own.run(t, "run_command", m{"argv": []string{"env"}})
		checkResult(t, res, true, "PATH="+os.Getenv("PATH")+"\nFOO=bar\nPWD=/elsewhere\n"+AgentSpawnedEnv+"=1\n[exit code: 0]")
	})
	t.Run("empty env", func(t *testing.T) {
		res := newEnvAt(t, e.root, Options{Env: []string{}}).run(t, "run_command", m{"argv": []string{"/usr/bin/env"}})
		checkResult(t, res, true, "PWD="+e.root+"\n"+AgentSpawnedEnv+"=1\n[exit code: 0]")
	})
	t.Run("the agent marker cannot be configured away", func(t *testing.T) {
		res := newEnvAt(t, e.root, Options{Env: []string{AgentSpawnedEnv + "=0"}}).run(t, "run_command", m{"argv": []string{"/usr/bin/env"}})
		checkResult(t, res, true, "PWD="+e.root+"\n"+AgentSpawnedEnv+"=1\n[exit code: 0]")
	})
	t.Run("lookup uses the env PATH", func(t *testing.T) {
		res := newEnvAt(t, e.root, Options{Env: []string{"PATH=" + e.root}}).run(t, "run_command", m{"argv": []string{"echo", "x"}})
		checkResult(t, res, false, "command not found: echo")
	})
}

func TestRunCommandCap(t *testing.T) {
	e := newEnv(t, Options{OutputCap: 100})
	total := 0
	for i := 1; i <= 20000; i++ {
		total += len(strconv.Itoa(i)) + 1
	}
	res := e.run(t, "run_command", m{"argv": []string{"seq", "20000"}})
	var shown strings.Builder
	for i := 1; shown.Len() < 100; i++ {
		fmt.Fprintf(&shown, "%d\n", i)
	}
	want := shown.String()[:100] + "\n" + fmt.Sprintf("[output cut: %d bytes, showing the first 100]", total) + "\n[exit code: 0]"
	checkResult(t, res, true, want)
}

// TestRunCommandKill: a timeout, a cancel and a cancel before the start
// each kill the command and say why (the process group cases are
// TestRunCommandKillsTheGroup).
func TestRunCommandKill(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := newEnvAt(t, root, Options{})
	short := newEnvAt(t, root, Options{CommandTimeout: 50 * time.Millisecond})
	background := context.Background
	deadline := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	cancelled := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	tests := []struct {
		name string
		env  *env
		ctx  func() context.Context
		args m
		ok   bool
		out  string
	}{
		{"timeout_ms", plain, background, m{"argv": []string{"sleep", "10"}, "timeout_ms": 50}, false, "[killed: timed out after 50ms]"},
		{"default timeout", short, background, m{"argv": []string{"sleep", "10"}}, false, "[killed: timed out after 50ms]"},
		{"cancel", plain, deadline, m{"argv": []string{"sleep", "10"}}, false, "[killed: cancelled]"},
		{"cancelled before", plain, cancelled, m{"argv": []string{"sleep", "10"}}, false, "cancelled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.env.runCtx(t, tc.ctx(), "run_command", tc.args)
			checkResult(t, res, tc.ok, tc.out)
		})
	}
}

func TestUnifiedDiff(t *testing.T) {
	numbered := func(n int, change map[int]string) string {
		var sb strings.Builder
		for i := 1; i <= n; i++ {
			if s, ok := change[i]; ok {
				sb.WriteString(s)
				continue
			}
			fmt.Fprintf(&sb, "%d\n", i)
		}
		return sb.String()
	}
	tests := []struct {
		name           string
		old, new       string
		diff           string
		added, removed int
	}{
		{"equal", "a\nb\n", "a\nb\n", "", 0, 0},
		{"both empty", "", "", "", 0, 0},
		{"from empty", "", "a\nb\n", "@@ -0,0 +1,2 @@\n+a\n+b\n", 2, 0},
		{"to empty", "a\nb\n", "", "@@ -1,2 +0,0 @@\n-a\n-b\n", 0, 2},
		{"append", "a\n", "a\nb\n", "@@ -1 +1,2 @@\n a\n+b\n", 1, 0},
		{"prepend", "b\n", "a\nb\n", "@@ -1 +1,2 @@\n+a\n b\n", 1, 0},
		{"insert in the middle, far from the ends", numbered(10, nil), numbered(10, map[int]string{5: "5\nnew\n"}),
			"@@ -3,6 +3,7 @@\n 3\n 4\n 5\n+new\n 6\n 7\n 8\n", 1, 0},
		{"newline added at the end", "a\nb", "a\nb\n", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", 1, 1},
		{"newline removed at the end", "a\n", "a", "@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n", 1, 1},
		{"append without newline", "a\n", "a\nb", "@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n", 1, 0},
		{"two hunks", numbered(20, nil), numbered(20, map[int]string{2: "two\n", 18: "eighteen\n"}),
			"@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n", 2, 2},
		{"six lines apart share a hunk", numbered(12, nil), numbered(12, map[int]string{2: "two\n", 9: "nine\n"}),
			"@@ -1,12 +1,12 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n 7\n 8\n-9\n+nine\n 10\n 11\n 12\n", 2, 2},
		{"seven lines apart do not", numbered(13, nil), numbered(13, map[int]string{2: "two\n", 10: "ten\n"}),
			"@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n", 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, added, removed := unifiedDiff("a/f", "b/f", tc.old, tc.new)
			want := tc.diff
			if want != "" {
				want = "--- a/f\n+++ b/f\n" + want
			}
			if d != want || added != tc.added || removed != tc.removed {
				t.Errorf("diff (+%d -%d)\n%s\nwant (+%d -%d)\n%s", added, removed, d, tc.added, tc.removed, want)
			}
			if got := applyUnified(t, tc.old, d); got != tc.new {
				t.Errorf("applying the diff gives %q", got)
			}
		})
	}
}

// TestUnifiedDiffRandom checks on many random pairs that the diff applies
// and is minimal, and that the fallback past maxEditDistance still applies.
func TestUnifiedDiffRandom(t *testing.T) {
	r := newRand(1)
	gen := func() string {
		var sb strings.Builder
		n := r.intn(12)
		for i := 0; i < n; i++ {
			sb.WriteByte("abcd"[r.intn(4)])
			if i < n-1 || r.intn(4) > 0 {
				sb.WriteByte('\n')
			}
		}
		return sb.String()
	}
	for i := 0; i < 3000; i++ {
		old, new := gen(), gen()
		d, added, removed := unifiedDiff("a/f", "b/f", old, new)
		if got := applyUnified(t, old, d); got != new {
			t.Fatalf("%q -> %q: the diff\n%s\ngives %q", old, new, d, got)
		}
		a, b := splitLines(old), splitLines(new)
		if l := lcs(a, b); added != len(b)-l || removed != len(a)-l {
			t.Fatalf("%q -> %q: +%d -%d is not minimal (lcs %d)\n%s", old, new, added, removed, l, d)
		}
	}

	// Past the edit limit: every line changes, the middle is replaced whole.
	var old, new strings.Builder
	for i := 0; i < maxEditDistance; i++ {
		fmt.Fprintf(&old, "old %d\n", i)
		fmt.Fprintf(&new, "new %d\n", i)
	}
	d, added, removed := unifiedDiff("a/f", "b/f", "same\n"+old.String()+"same\n", "same\n"+new.String()+"same\n")
	if added != maxEditDistance || removed != maxEditDistance {
		t.Fatalf("+%d -%d", added, removed)
	}
	if got := applyUnified(t, "same\n"+old.String()+"same\n", d); got != "same\n"+new.String()+"same\n" {
		t.Fatal("the fallback diff does not apply")
	}
}

// rnd is a tiny deterministic generator (xorshift), so failures reproduce.
type rnd struct{ s uint64 }

func newRand(seed uint64) *rnd { return &rnd{s: seed*2654435761 + 1} }

func (r *rnd) intn(n int) int {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return int(r.s % uint64(n))
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// applyUnified applies a unified diff made by unifiedDiff to old, checking
// the hunk headers and context as patch would.
func applyUnified(t *testing.T, old, diff string) string {
	t.Helper()
	if diff == "" {
		return old
	}
	a := splitLines(old)
	lines := strings.SplitAfter(diff, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		t.Fatalf("no headers:\n%s", diff)
	}
	lines = lines[2:]
	var out []string
	pos := 0
	parseRange := func(s string) (start, n int) {
		n = 1
		if i := strings.IndexByte(s, ','); i >= 0 {
			n, _ = strconv.Atoi(s[i+1:])
			s = s[:i]
		}
		start, _ = strconv.Atoi(s)
		return start, n
	}
	for i := 0; i < len(lines); {
		var from, to string
		if _, err := fmt.Sscanf(lines[i], "@@ -%s +%s @@\n", &from, &to); err != nil {
			t.Fatalf("bad hunk header %q in\n%s", lines[i], diff)
		}
		aStart, aLen := parseRange(from)
		_, bLen := parseRange(to)
		if aLen > 0 {
			aStart-- // a 0-based index; an empty range names the line before
		}
		if aStart < pos {
			t.Fatalf("hunks overlap in\n%s", diff)
		}
		out = append(out, a[pos:aStart]...)
		pos = aStart
		i++
		gotA, gotB := 0, 0
		for i < len(lines) && !strings.HasPrefix(lines[i], "@@") {
			l := lines[i]
			body := l[1:]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\\") {
				body = strings.TrimSuffix(body, "\n")
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(a) || a[pos] != body {
					t.Fatalf("line %d does not match %q in\n%s", pos+1, body, diff)
				}
				pos++
				gotA++
				if l[0] == ' ' {
					out = append(out, body)
					gotB++
				}
			case '+':
				out = append(out, body)
				gotB++
			case '\\':
			default:
				t.Fatalf("bad line %q in\n%s", l, diff)
			}
			i++
		}
		if gotA != aLen || gotB != bLen {
			t.Fatalf("hunk %s +%s covers %d and %d lines in\n%s", from, to, gotA, gotB, diff)
		}
	}
	out = append(out, a[pos:]...)
	return strings.Join(out, "")
}
