package external_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/core/tool/external"
	"github.com/openmax/openmax/provider/clock"
)

// project makes a project directory holding files (path → content); a
// content starting with "@" is copied from testdata.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if src, ok := strings.CutPrefix(content, "@"); ok {
			data, err := os.ReadFile(filepath.Join("testdata", src))
			if err != nil {
				t.Fatal(err)
			}
			content = string(data)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// memApprovals is an in-memory external.Approvals.
type memApprovals struct {
	mu sync.Mutex
	ok map[string]bool
}

func (m *memApprovals) Approved(path, sum string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ok[path+" "+sum]
}

func (m *memApprovals) Approve(path, sum string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ok == nil {
		m.ok = map[string]bool{}
	}
	m.ok[path+" "+sum] = true
	return nil
}

const showManifest = `{"description": "shows its input", "code": "tools/show.sh", "interpreter": ["/bin/sh"], "env": ["GRANTED", "GRANTED"]}`

func TestLoadRefusesBadManifests(t *testing.T) {
	cases := []struct {
		name, manifest, want string
	}{
		{"unknown key", `{"code": "t.sh", "shell": "bash"}`, `unknown field "shell"`},
		{"no code", `{"description": "x"}`, `"code"`},
		{"name differs", `{"name": "other", "code": "t.sh"}`, `is not the file's name`},
		{"code outside", `{"code": "../t.sh"}`, "outside the project"},
		{"absolute code", `{"code": "/bin/sh"}`, "relative to the project"},
		{"relative interpreter", `{"code": "t.sh", "interpreter": ["bin/python"]}`, "absolute path or a program name"},
		{"bad env name", `{"code": "t.sh", "env": ["A=B"]}`, "not an environment variable name"},
		{"long timeout", `{"code": "t.sh", "timeout_seconds": 601}`, "timeout_seconds"},
		{"schema not object", `{"code": "t.sh", "parameters": [1]}`, "parameters"},
		{"not json", `{"code": `, "not a valid manifest"},
		{"two objects", `{"code": "t.sh"} {}`, "data after"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := project(t, map[string]string{".openmax/tools/t.json": c.manifest, "t.sh": "true\n", ".openmax/tools/good.json": `{"code": "t.sh"}`})
			tools, errs := external.Load(dir, external.Options{})
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) || !strings.Contains(errs[0].Error(), ".openmax/tools/t.json") {
				t.Fatalf("errors %v, want one naming the file and saying %q", errs, c.want)
			}
			if len(tools) != 1 || tools[0].Spec().Name != "good" {
				t.Errorf("the good manifest did not load beside the bad one: %d tools", len(tools))
			}
		})
	}
}

func TestUnapprovedSourceFollowsExactBytes(t *testing.T) {
	dir := project(t, map[string]string{".openmax/tools/show.json": showManifest, "tools/show.sh": "@show.sh"})
	appr := &memApprovals{}
	tl, err := external.LoadManifest(dir, ".openmax/tools/show.json", external.Options{Approvals: appr})
	if err != nil {
		t.Fatal(err)
	}
	if got := tl.EnvGrant(); strings.Join(got, ",") != "GRANTED" {
		t.Errorf("EnvGrant = %q, want the allowlist without repeats", got)
	}
	path, sum, err := tl.UnapprovedSource()
	if err != nil || path != ".openmax/tools/show.json" || sum != external.Sum([]byte(showManifest)) {
		t.Fatalf("first unapproved = %q %q %v, want the manifest", path, sum, err)
	}
	if err := tl.ApproveSource(path, sum); err != nil {
		t.Fatal(err)
	}
	path, sum, _ = tl.UnapprovedSource()
	if path != "tools/show.sh" {
		t.Fatalf("second unapproved = %q, want the code", path)
	}
	_ = tl.ApproveSource(path, sum)
	if path, _, err := tl.UnapprovedSource(); path != "" || err != nil {
		t.Fatalf("after both approvals: %q %v", path, err)
	}
	// One changed byte of the code asks again, with the new digest.
	if err := os.WriteFile(filepath.Join(dir, "tools/show.sh"), []byte("echo changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path, sum2, _ := tl.UnapprovedSource()
	if path != "tools/show.sh" || sum2 == sum || sum2 != external.Sum([]byte("echo changed\n")) {
		t.Fatalf("after a change: %q %q", path, sum2)
	}
	// A code file that is gone is an error: the call must not run.
	os.Remove(filepath.Join(dir, "tools/show.sh"))
	if _, _, err := tl.UnapprovedSource(); err == nil {
		t.Error("a missing code file was not an error")
	}
}

func TestRunGetsOnlyTheAllowlistedEnvironment(t *testing.T) {
	dir := project(t, map[string]string{".openmax/tools/show.json": showManifest, "tools/show.sh": "@show.sh"})
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/u", "GRANTED": "yes", "OPENAI_API_KEY": "sk-secret", "OTHER": "no"}
	tl, err := external.LoadManifest(dir, ".openmax/tools/show.json", external.Options{Getenv: func(k string) string { return env[k] }, ExtraEnv: []string{"OPENMAX_CHILD=1"}})
	if err != nil {
		t.Fatal(err)
	}
	res := tl.Run(context.Background(), json.RawMessage(`{"x":1}`))
	if !res.OK {
		t.Fatalf("run failed: %s", res.Output)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		got[l] = true
	}
	for _, want := range []string{`args: {"x":1}`, "GRANTED=yes", "HOME=/home/u", "OPENMAX_CHILD=1"} {
		if !got[want] {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
	}
	if strings.Contains(res.Output, "sk-secret") || strings.Contains(res.Output, "OTHER=") {
		t.Errorf("a variable outside the allowlist reached the tool:\n%s", res.Output)
	}
}

func TestRunFailures(t *testing.T) {
	dir := project(t, map[string]string{
		".openmax/tools/fail.json":     `{"code": "fail.sh", "interpreter": ["sh"]}`,
		"fail.sh":                      "@fail.sh",
		".openmax/tools/noexec.json":   `{"code": "fail.sh"}`,
		".openmax/tools/nointerp.json": `{"code": "fail.sh", "interpreter": ["no-such-interpreter"]}`,
	})
	opts := external.Options{Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }}
	cases := []struct{ tool, want string }{
		{"fail", "bad input\n[exit code: 3]"},
		{"noexec", "cannot run noexec"},
		{"nointerp", "interpreter not found: no-such-interpreter"},
	}
	for _, c := range cases {
		tl, err := external.LoadManifest(dir, ".openmax/tools/"+c.tool+".json", opts)
		if err != nil {
			t.Fatal(err)
		}
		res := tl.Run(context.Background(), json.RawMessage(`{}`))
		if res.OK || !strings.Contains(res.Output, c.want) {
			t.Errorf("%s: ok %v output %q, want failure containing %q", c.tool, res.OK, res.Output, c.want)
		}
	}
}

func TestRunTimesOutOnTheClock(t *testing.T) {
	dir := project(t, map[string]string{".openmax/tools/hang.json": `{"code": "hang.sh", "interpreter": ["/bin/sh"], "timeout_seconds": 30}`, "hang.sh": "@hang.sh"})
	fake := clock.NewFake(time.Unix(0, 0))
	tl, err := external.LoadManifest(dir, ".openmax/tools/hang.json", external.Options{Clock: fake, Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() { done <- tl.Run(context.Background(), json.RawMessage(`{}`)).Output }()
	// Once the call waits on the clock, its timeout passes in no wall time.
	if err := fake.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(30 * time.Second)
	if out := <-done; !strings.HasSuffix(out, "[killed: timed out after 30s]") {
		t.Fatalf("output %q", out)
	}
}

func TestRunCancelKillsTheGroup(t *testing.T) {
	dir := project(t, map[string]string{".openmax/tools/hang.json": `{"code": "hang.sh", "interpreter": ["/bin/sh"]}`, "hang.sh": "@hang.sh"})
	tl, err := external.LoadManifest(dir, ".openmax/tools/hang.json", external.Options{Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := tl.Run(ctx, json.RawMessage(`{}`)); res.OK || res.Output != "cancelled" {
		t.Errorf("a call on a done context: %+v", res)
	}
}

func TestRunApprovedChecksTheBytesAtTheStart(t *testing.T) {
	dir := project(t, map[string]string{".openmax/tools/show.json": showManifest, "tools/show.sh": "@show.sh"})
	appr := &memApprovals{}
	opts := external.Options{Approvals: appr, Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }}
	tl, err := external.LoadManifest(dir, ".openmax/tools/show.json", opts)
	if err != nil {
		t.Fatal(err)
	}
	for {
		path, sum, err := tl.UnapprovedSource()
		if err != nil {
			t.Fatal(err)
		}
		if path == "" {
			break
		}
		tl.ApproveSource(path, sum)
	}
	if res := tl.RunApproved(context.Background(), json.RawMessage(`{}`)); !res.OK {
		t.Fatalf("approved bytes: %s", res.Output)
	}
	// Swapped after the approval: refused when checked, as auto would run it.
	swapped := "echo swapped\n"
	if err := os.WriteFile(filepath.Join(dir, "tools/show.sh"), []byte(swapped), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "not run: tools/show.sh changed after it was approved (its bytes are now sha " + external.Sum([]byte(swapped))[:12] + ", which no human approved)"
	if res := tl.RunApproved(context.Background(), json.RawMessage(`{}`)); res.OK || res.Output != want {
		t.Errorf("swapped code, checked: %+v\nwant %q", res, want)
	}
	if res := tl.Run(context.Background(), json.RawMessage(`{}`)); !res.OK || res.Output != "swapped\n" {
		t.Errorf("swapped code, unchecked: %+v", res)
	}
}
