//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/gettest"
	"github.com/openmax/openmax/recorder/cassette"
)

// setFileSizeLimit sets the soft RLIMIT_FSIZE of process pid: past it, a
// write to a regular file is cut short and then fails (EFBIG), which is how
// a disk that fills up looks to a writer. Any process may do this to its own
// user's processes, so the test needs no privileges and no tiny filesystem.
func setFileSizeLimit(t *testing.T, pid int, limit uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&lim)), 0, 0); errno != 0 {
		t.Fatalf("prlimit on process %d: %v", pid, errno)
	}
	lim.Cur = min(limit, lim.Max)
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
		t.Fatalf("prlimit on process %d: %v", pid, errno)
	}
}

// TestDiskFullTurnsRecover is issue 9's point 14 through the real binary:
// the session file's disk "fills up" in the middle of a session (a user
// record is cut short), so turns fail, each with an error line and done
// error as the contract says; once there is room again the next turn
// succeeds in the same process; and a fresh process continuing the session
// sees every completed record and nothing of the failed ones.
func TestDiskFullTurnsRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildBinary(t)
	state, project := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := trustedBinaryEnv(t, ctx, bin, project, state)

	s := startLive(t, ctx, bin, env, "--stdio", "--provider", "echo", "--project", project, "--session-id", "s-full")
	s.send(`{"cmd":"user","text":"one"}`)
	if done := s.until(ctx, `"type":"done"`); !strings.Contains(done, `"stop_reason":"stop"`) {
		t.Fatalf("first turn: %s", done)
	}
	files, err := filepath.Glob(filepath.Join(state, "openmax", "projects", "*", "sessions", "s-full.jsonl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("session file: %v %v", files, err)
	}
	path := files[0]
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	good := info.Size()

	// The disk is full: room for 20 more bytes, less than a record.
	setFileSizeLimit(t, s.cmd.Process.Pid, uint64(good)+20)
	for _, text := range []string{"two", "three"} {
		s.send(`{"cmd":"user","text":"` + text + `"}`)
		errLine := s.until(ctx, `"type":"error"`)
		done := s.until(ctx, `"type":"done"`)
		if !strings.Contains(done, `"stop_reason":"error"`) || !strings.Contains(errLine, "session record") {
			t.Fatalf("turn %q on a full disk: %s then %s", text, errLine, done)
		}
		// Whatever of the record got out was cut off again.
		if data, err := os.ReadFile(path); err != nil || int64(len(data)) != good {
			t.Fatalf("after the failed turn %q the session file holds %d bytes, want its %d good ones (%v):\n%s", text, len(data), good, err, data)
		}
	}

	// Space is freed: the same process's next turn succeeds.
	setFileSizeLimit(t, s.cmd.Process.Pid, ^uint64(0))
	s.send(`{"cmd":"user","text":"four"}`)
	if done := s.until(ctx, `"type":"done"`); !strings.Contains(done, `"stop_reason":"stop"`) {
		t.Fatalf("turn after the disk recovered: %s\nstderr: %s", done, s.stderr.String())
	}
	if code := s.finish(); code != 0 {
		t.Errorf("exit %d", code)
	}

	// A fresh process sees the completed records, in order, and no others.
	cont := exec.CommandContext(ctx, bin, "--stdio", "--provider", "echo", "--project", project, "--continue")
	cont.Env = env
	var stderr bytes.Buffer
	cont.Stderr = &stderr
	out, err := cont.Output()
	if err != nil {
		t.Fatalf("--continue: %v %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("--continue printed:\n%s", out)
	}
	var tr wire.Transcript
	if err := json.Unmarshal([]byte(lines[1]), &tr); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tr.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	if want := "user:one assistant:one user:four assistant:four"; strings.Join(got, " ") != want {
		t.Errorf("continued transcript %q, want %q", strings.Join(got, " "), want)
	}
}

// TestRecordDiskFullSaysRecordingIncomplete is issue 21's point 7 through
// the real binary: `openmax record` of eight turns whose cassette's disk
// fills up after a few (a file size limit a little past what the first
// three turns wrote). The first turn whose recording could not be written
// gets an error line and done error, and so does every turn after it (none
// goes unrecorded while reporting success); openmax says on stderr that
// the recording is incomplete and exits non-zero; and the cassette holds
// exactly the turns that ended well, loadable by openmax and by stock
// go-vcr.
func TestRecordDiskFullSaysRecordingIncomplete(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	const turns = 8
	var mu sync.Mutex
	served := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		served++
		n := served
		mu.Unlock()
		text := fmt.Sprintf("reply %d: %s", n, strings.Repeat("x", 8<<10))
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+text+`"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	bin := buildBinary(t)
	project := t.TempDir()
	cas := filepath.Join(t.TempDir(), "c.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := trustedBinaryEnv(t, ctx, bin, project, "", "OPENAI_API_KEY="+testOpenAIKey)
	s := startLive(t, ctx, bin, env, "record", "--cassette", cas, "--provider", "openai", "--base-url", srv.URL+"/v1", "--project", project, "--session-id", "s")

	turn := func(i int) (errLine, stop string) {
		t.Helper()
		s.send(fmt.Sprintf(`{"cmd":"user","text":"turn %d"}`, i))
		for {
			line := s.until(ctx, `"type":"`)
			var ev struct {
				Type, Message string
				StopReason    string `json:"stop_reason"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("stdout line %q: %v", line, err)
			}
			switch ev.Type {
			case "error":
				errLine = ev.Message
			case "done":
				return errLine, ev.StopReason
			}
		}
	}
	const before = 3
	for i := 1; i <= before; i++ {
		if e, stop := turn(i); stop != "stop" {
			t.Fatalf("turn %d before the disk filled: %s %s\nstderr: %s", i, e, stop, s.stderr.String())
		}
	}
	// The disk fills: room for the cassette written whole (a failed
	// append is retried as a rewrite, without the sessions appends leave
	// hidden) plus 96 KiB, a few more turns: each reply is 8 KiB and each
	// request carries the replies before it, so turns grow.
	f, err := cassette.Load(cas)
	if err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(t.TempDir(), "whole.yaml")
	if err := f.Save(whole); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(whole)
	if err != nil {
		t.Fatal(err)
	}
	setFileSizeLimit(t, s.cmd.Process.Pid, uint64(info.Size())+96<<10)

	first := 0 // the first turn that reported the recording failed
	for i := before + 1; i <= turns; i++ {
		e, stop := turn(i)
		switch {
		case first == 0 && e == "":
			if stop != "stop" {
				t.Fatalf("turn %d: done %s with no error line", i, stop)
			}
		case first == 0:
			first = i
			fallthrough
		default:
			if stop != "error" || !strings.Contains(e, "recording is incomplete") {
				t.Errorf("turn %d after the recording failed: error %q, done %s; want an error saying the recording is incomplete and done error", i, e, stop)
			}
		}
	}
	code := s.finish()
	f, lerr := cassette.Load(cas)
	kept := -1
	if lerr == nil {
		kept = len(f.Interactions)
	}
	t.Logf("%d turns, the disk full after %d: the first error at turn %d; %d interactions kept; exit %d", turns, before, first, kept, code)
	if first == 0 {
		t.Fatalf("no turn reported that the cassette could not be written (%d of %d interactions kept, exit %d)\nstderr: %s", kept, turns, code, s.stderr.String())
	}
	if code == 0 || !strings.Contains(s.stderr.String(), "recording is incomplete") {
		t.Errorf("exit %d; stderr does not say the recording is incomplete:\n%s", code, s.stderr.String())
	}
	if lerr != nil {
		t.Fatalf("the cassette written before the disk filled does not load: %v", lerr)
	}
	if kept != first-1 {
		t.Errorf("the cassette keeps %d interactions; want the %d of the turns that ended well", kept, first-1)
	}
	stock, err := vcr.Load(strings.TrimSuffix(cas, ".yaml"))
	if err != nil || len(stock.Interactions) != kept {
		t.Errorf("stock go-vcr: %v, %d interactions (want %d)", err, len(stock.Interactions), kept)
	}
}

// TestRecordProxyDiskFullRefusesTheRest: `openmax record --proxy` whose
// cassette's disk is full from the start. The first exchange still
// reaches its client (its save fails after), every later request is
// answered 507 saying the recording is incomplete and never goes
// upstream, and the proxy exits 1 saying so on stderr, leaving the empty
// cassette it started with, loadable.
func TestRecordProxyDiskFullRefusesTheRest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	var mu sync.Mutex
	upstreamGot := 0
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		upstreamGot++
		mu.Unlock()
		io.WriteString(w, strings.Repeat("y", 8<<10))
	}))
	defer upstream.Close()
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cas := filepath.Join(t.TempDir(), "c.yaml")
	proxy := startServer(t, ctx, bin, "record", "--proxy", "--upstream", upstream.URL, "--cassette", cas)
	setFileSizeLimit(t, proxy.cmd.Process.Pid, 1<<10)

	get := func() (int, string) { t.Helper(); return gettest.Get(t, nil, proxy.URL+"/v1/x") }
	if code, body := get(); code != http.StatusOK || len(body) != 8<<10 {
		t.Fatalf("the first request: %d, %d bytes", code, len(body))
	}
	for i := 2; i <= 3; i++ {
		if code, body := get(); code != http.StatusInsufficientStorage || !strings.Contains(body, "recording is incomplete") {
			t.Errorf("request %d after the cassette could not be written: %d %q", i, code, body)
		}
	}
	mu.Lock()
	if upstreamGot != 1 {
		t.Errorf("the upstream got %d requests, want only the first", upstreamGot)
	}
	mu.Unlock()
	if code := proxy.stop(t); code != 1 || !strings.Contains(proxy.stderr.String(), "recording is incomplete") {
		t.Errorf("record --proxy exited %d; stderr:\n%s", code, proxy.stderr)
	}
	if f, err := cassette.Load(cas); err != nil || len(f.Interactions) != 0 {
		t.Errorf("the cassette: %v (want the empty one it started with)", err)
	}
}
