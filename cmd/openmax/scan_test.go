package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/citest"
	"github.com/openmax/openmax/recorder/scan"
)

// scanRun is one run of `openmax cassette scan` through the binary.
type scanRun struct {
	stdout, stderr string
	code           int
	maxRSS         int64 // bytes
}

// runScanBinary runs the binary with args in dir (the working directory
// matters: the default allowlist is looked for from it).
func runScanBinary(t *testing.T, dir string, args ...string) scanRun {
	t.Helper()
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"cassette", "scan"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "OPENMAX_PEAK_RSS=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("scan %v did not end within 2 minutes", args)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("scan %v: %v", args, err)
	}
	r := scanRun{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
	r.maxRSS, r.stderr = ownPeakRSS(t, r.stderr)
	return r
}

// peakRSS is the line OPENMAX_PEAK_RSS adds to stderr.
var peakRSS = regexp.MustCompile(`openmax: peak RSS (\d+) kB\n`)

// ownPeakRSS is a binary's own peak memory, from the line
// OPENMAX_PEAK_RSS=1 makes it write (VmHWM of its address space), and its
// stderr without that line. getrusage's maxrss of a child would count
// this test binary's memory too, which the child shares between fork and
// exec: under -race, most of it.
func ownPeakRSS(t *testing.T, stderr string) (int64, string) {
	t.Helper()
	m := peakRSS.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no peak RSS line in stderr (OPENMAX_PEAK_RSS=1 not set?):\n%s", stderr)
	}
	kib, _ := strconv.ParseInt(m[1], 10, 64)
	return kib << 10, strings.Replace(stderr, m[0], "", 1)
}

// fakeKey draws a fake OpenAI project key (none is written in this
// source).
func fakeKey(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed))
	const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte("sk-proj-Ab1")
	for range 45 {
		b = append(b, a[r.IntN(len(a))])
	}
	return string(b)
}

// leakyCassette is a cassette with key in a request header (line 9) and
// in the JSON body of an SSE response (line 16).
func leakyCassette(key string) string {
	return `version: 1
interactions:
  - request:
      body: '{"model":"gpt-4o-mini","stream":true}'
      headers:
        Authorization:
          - '[scrubbed]'
        X-Debug:
          - ` + key + `
      url: https://api.openai.com/v1/chat/completions
      method: POST
    response:
      body: |+
        data: {"id":"chatcmpl-DuLdWOILVCVVrpY7aRAWaTdcPyWSy","choices":[{"delta":{"content":"hi"}}]}

        data: {"choices":[{"delta":{"content":"` + key + `"}}]}

        data: [DONE]

      headers:
        Content-Type:
          - text/event-stream
      status: 200 OK
      code: 200
`
}

// TestScanCommand: `openmax cassette scan` through the binary: the
// library scans clean (exit 0), a leaked key is reported on its lines
// (exit 1) and never whole on stdout, stderr or in --json, an allowlist
// (named or the default file) silences it, and the exit code rule holds
// for usage errors, missing files, FIFOs and malformed allowlists.
func TestScanCommand(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key := fakeKey(1)
	leaky := filepath.Join(dir, "tapes", "leaky.yaml")
	os.MkdirAll(filepath.Dir(leaky), 0o755)
	if err := os.WriteFile(leaky, []byte(leakyCassette(key)), 0o644); err != nil {
		t.Fatal(err)
	}
	fp := scan.Fingerprint(scan.RuleOpenAI, key)
	noSecret := func(name string, r scanRun) {
		t.Helper()
		for _, s := range []string{r.stdout, r.stderr} {
			if strings.Contains(s, key[:12]) {
				t.Errorf("%s: the key's first 12 characters are in the output:\n%s", name, s)
			}
		}
	}

	t.Run("the library is clean", func(t *testing.T) {
		r := runScanBinary(t, dir, filepath.Join(root, "cassettes"), filepath.Join(root, "golden"))
		if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "0 finding(s), 0 problem(s)") {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("a leak is found on its lines", func(t *testing.T) {
		r := runScanBinary(t, dir, filepath.Join(dir, "tapes"))
		want := fmt.Sprintf("%[1]s:9: openai-key: interaction 0, request header X-Debug: sk-p… (%[2]s)\n"+
			"%[1]s:16: openai-key: interaction 0, response body event 1 (data) $.choices[0].delta.content: sk-p… (%[2]s)\n", leaky, fp)
		if r.code != 1 || r.stdout != want || !strings.Contains(r.stderr, "2 finding(s)") {
			t.Errorf("exit %d\nstdout %s\nwant   %s\nstderr %s", r.code, r.stdout, want, r.stderr)
		}
		noSecret("lines", r)
	})

	t.Run("--json", func(t *testing.T) {
		r := runScanBinary(t, dir, "--json", leaky)
		var rep struct {
			Files    int
			Findings []scan.Finding
			Problems []scan.Problem
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if r.code != 1 || rep.Files != 1 || len(rep.Findings) != 2 || rep.Findings[0].Line != 9 || rep.Findings[0].Secret != "sk-p…" ||
			rep.Findings[0].Fingerprint != fp || rep.Findings[1].Where != "response body event 1 (data) $.choices[0].delta.content" {
			t.Errorf("exit %d, report %+v", r.code, rep)
		}
		noSecret("json", r)
	})

	t.Run("an allowlist silences it", func(t *testing.T) {
		allow := filepath.Join(dir, "allow")
		os.WriteFile(allow, []byte("# the fake key of leaky.yaml\n"+fp+"\n"), 0o644)
		if r := runScanBinary(t, dir, "--allow", allow, leaky); r.code != 0 || r.stdout != "" {
			t.Errorf("--allow: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		// The default file, found from a directory below the one it is in.
		os.WriteFile(filepath.Join(dir, scan.DefaultAllowFile), []byte(fp+"\n"), 0o644)
		defer os.Remove(filepath.Join(dir, scan.DefaultAllowFile))
		if r := runScanBinary(t, filepath.Join(dir, "tapes"), "leaky.yaml"); r.code != 0 || r.stdout != "" {
			t.Errorf("default allowlist: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})

	fifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	badAllow := filepath.Join(dir, "bad.allow")
	os.WriteFile(badAllow, []byte(key+"\n"), 0o644)
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no path", nil, 2, "usage"},
		{"an unknown flag", []string{"--nope", leaky}, 2, "usage"},
		{"a missing file", []string{filepath.Join(dir, "missing.yaml")}, 1, "no such file"},
		{"a FIFO", []string{fifo}, 1, "not a regular file"},
		{"an unreadable file", []string{"/proc/self/mem"}, 1, "/proc/self/mem"}, // a regular file even root cannot read from its start
		{"a missing allowlist", []string{"--allow", filepath.Join(dir, "missing.allow"), leaky}, 1, "allowlist"},
		{"a malformed allowlist", []string{"--allow", badAllow, leaky}, 1, "bad.allow:1: not an entry"},
	} {
		r := runScanBinary(t, dir, tt.args...)
		if r.code != tt.code || r.stdout != "" || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", tt.name, r.code, r.stdout, r.stderr, tt.code, tt.stderr)
		}
		noSecret(tt.name, r)
	}
}

// TestScanHugeCassette: a 100 MB cassette (one body of 100 MB) is scanned
// as text, streaming: the key after the body is found on its line, and
// the process's peak memory stays far below the file's size.
func TestScanHugeCassette(t *testing.T) {
	dir := t.TempDir()
	key := fakeKey(2)
	path := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("version: 1\ninteractions:\n  - request:\n      body: '")
	line := bytes.Repeat([]byte("x"), 1<<20)
	for range 100 {
		f.Write(line)
	}
	f.WriteString("'\n      headers:\n        X-Debug:\n          - " + key + "\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r := runScanBinary(t, dir, path)
	want := fmt.Sprintf("%s:7: openai-key: text: sk-p… (%s)\n", path, scan.Fingerprint(scan.RuleOpenAI, key))
	if r.code != 1 || r.stdout != want || !strings.Contains(r.stderr, "read as text") {
		t.Errorf("exit %d\nstdout %q\nwant   %q\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	if r.maxRSS == 0 || r.maxRSS > 48<<20 {
		t.Errorf("peak RSS %d MiB scanning a 100 MiB file; want under 48 MiB", r.maxRSS>>20)
	}
	t.Logf("peak RSS %d MiB", r.maxRSS>>20)
}

// TestScanAsPreCommitHook: the pre-commit hook docs/record-replay.md
// gives, installed in a fresh git repository with this binary on PATH,
// lets a clean recording be committed (a name with a space included) and
// refuses one holding a key, naming its line.
func TestScanAsPreCommitHook(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		citest.SkipOutsideCI(t, "no git on PATH (the hook runs under git commit)")
	}
	doc, err := os.ReadFile("../../docs/record-replay.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(doc), "**As a pre-commit hook.**")
	_, block, _ := strings.Cut(after, "```sh\n")
	hook, _, _ := strings.Cut(block, "```")
	if !strings.Contains(hook, "openmax cassette scan") {
		t.Fatalf("no hook in the docs: %q", hook)
	}
	bin := buildBinary(t)
	repo := t.TempDir()
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.test", "XDG_CONFIG_HOME="+t.TempDir())
	gitRun := func(args ...string) (string, error) {
		cmd := exec.Command(git, args...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := gitRun("init", "-q", "."); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git", "hooks", "pre-commit"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	clean, err := os.ReadFile(filepath.Join(libraryDir, "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repo, "clean one.yaml"), clean, 0o644)
	gitRun("add", ".")
	if out, err := gitRun("commit", "-q", "-m", "clean"); err != nil {
		t.Fatalf("the clean recording was refused: %v\n%s", err, out)
	}
	key := fakeKey(3)
	os.WriteFile(filepath.Join(repo, "leak.yaml"), []byte(leakyCassette(key)), 0o644)
	gitRun("add", "leak.yaml")
	out, err := gitRun("commit", "-q", "-m", "leak")
	if err == nil || !strings.Contains(out, "leak.yaml:9: openai-key") || strings.Contains(out, key[:12]) {
		t.Errorf("the leak: err %v, output:\n%s", err, out)
	}
	if log, _ := gitRun("log", "--format=%s"); strings.TrimSpace(log) != "clean" {
		t.Errorf("commits: %q; want only the clean one", log)
	}
}

// TestScanOutputInOrder: files are scanned concurrently, yet the findings
// come out in the order of the files and of their lines, every run the
// same bytes.
func TestScanOutputInOrder(t *testing.T) {
	dir := t.TempDir()
	var want strings.Builder
	for i := range 24 {
		p := filepath.Join(dir, fmt.Sprintf("t%02d.yaml", i))
		body := leakyCassette(fakeKey(uint64(100 + i)))
		if i%3 == 0 {
			body = strings.ReplaceAll(body, fakeKey(uint64(100+i)), "[scrubbed]")
		} else {
			fp := scan.Fingerprint(scan.RuleOpenAI, fakeKey(uint64(100+i)))
			fmt.Fprintf(&want, "%[1]s:9: openai-key: interaction 0, request header X-Debug: sk-p… (%[2]s)\n"+
				"%[1]s:16: openai-key: interaction 0, response body event 1 (data) $.choices[0].delta.content: sk-p… (%[2]s)\n", p, fp)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		var stdout, stderr bytes.Buffer
		if code := runScan([]string{"--allow", os.DevNull, dir}, &stdout, &stderr); code != 1 || stdout.String() != want.String() {
			t.Fatalf("exit %d\nstdout %s\nwant   %s\nstderr %s", code, stdout.String(), want.String(), stderr.String())
		}
	}
}
