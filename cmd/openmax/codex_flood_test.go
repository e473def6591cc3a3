package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core/wire"
)

// floodRSS bounds the peak RSS of openmax under a flood.
const floodRSS = 100 << 20

// floodRun is what one run of the binary against testdata/floodappserver
// showed.
type floodRun struct {
	lines  []string // stdout, token lines left out
	tokens int      // token lines
	stderr string
	maxRSS int64 // bytes
}

// runFlood runs `openmax --stdio --provider codex` with the hostile
// app-server testdata/floodappserver ARGS and sends one user command;
// once its done has come, the process's peak RSS is read (VmHWM: rusage
// would count the test binary's own memory, which the child shares until
// it execs) and stdin is closed: the process must then exit.
func runFlood(t *testing.T, args string, flags ...string) floodRun {
	t.Helper()
	bin := buildBinary(t)
	flood := testdataProgram(t, "floodappserver")
	dir := t.TempDir()
	// The watchdog catches a hang or unbounded growth; nothing is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--stdio", "--provider", "codex", "--project", dir, "--codex", flood + " " + args}, flags...)...)
	cmd.Env = trustedBinaryEnv(t, ctx, bin, dir, "")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, `{"cmd":"user","text":"go"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var r floodRun
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 128<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"type":"token"`)) {
			// The peak so far, now and then: a process past the bound
			// fails the test before it grows further.
			if r.tokens++; r.tokens%1000 == 1 {
				if rss := vmHWM(t, cmd.Process.Pid); rss >= floodRSS {
					t.Fatalf("peak RSS %d MiB after %d tokens, want under %d MiB", rss>>20, r.tokens, floodRSS>>20)
				}
			}
			continue
		}
		r.lines = append(r.lines, sc.Text())
		if strings.Contains(sc.Text(), `"type":"done"`) {
			r.maxRSS = vmHWM(t, cmd.Process.Pid)
			stdin.Close()
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("openmax did not end the flooded turn and exit; stdout:\n%s\nstderr (%d lines):\n%.4000s", strings.Join(r.lines, "\n"), strings.Count(stderr.String(), "\n"), stderr.String())
	}
	_ = cmd.Wait()
	r.stderr = stderr.String()
	return r
}

// done is the stop_reason of the run's done lines.
func (r floodRun) dones() []string {
	var stops []string
	for _, l := range r.lines {
		var ev struct {
			Type       string `json:"type"`
			StopReason string `json:"stop_reason"`
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == "done" {
			stops = append(stops, ev.StopReason)
		}
	}
	return stops
}

// TestCodexBackendDeltaFlood: an app-server that streams agent-message
// deltas without end (tiny, middling and 1 MiB ones) gets its reply cut
// at the reply-size cap (--max-reply-bytes, as for every provider, and at
// most 4 MiB of text held): the turn ends truncated (message_done, an
// error naming the limit, done), codex's turn is interrupted, and the
// process's peak RSS stays under 100 MiB, default flags.
func TestCodexBackendDeltaFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary; skipped in -short mode")
	}
	for _, tc := range []struct {
		name, args string
	}{
		{"6-byte deltas", "deltas 6"},
		{"16 KiB deltas", "deltas 16384"},
		{"1 MiB deltas", "deltas 1048576"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runFlood(t, tc.args)
			t.Logf("%d tokens, peak RSS %d MiB, %d stderr lines", r.tokens, r.maxRSS>>20, strings.Count(r.stderr, "\n"))
			if stops := r.dones(); len(stops) != 1 || stops[0] != wire.StopTruncated {
				t.Fatalf("done stop_reasons %q, want one truncated\nstdout:\n%.4000s\nstderr:\n%.4000s", stops, strings.Join(r.lines, "\n"), r.stderr)
			}
			var errs, messageDones int
			for _, l := range r.lines {
				switch {
				case strings.Contains(l, `"type":"error"`):
					errs++
					if !strings.Contains(l, "max reply bytes") {
						t.Errorf("the error does not name the limit: %.300s", l)
					}
				case strings.Contains(l, `"type":"message_done"`):
					messageDones++
				}
			}
			if errs != 1 || messageDones != 1 || r.tokens == 0 {
				t.Errorf("%d error, %d message_done and %d token lines, want 1, 1 and some", errs, messageDones, r.tokens)
			}
			if r.maxRSS >= floodRSS {
				t.Errorf("peak RSS %d MiB, want under %d MiB", r.maxRSS>>20, floodRSS>>20)
			}
		})
	}
}

// TestCodexBackendGarbageFlood: 100,000 lines that are not JSON and
// 100,000 notifications of unknown methods are counted, not copied to
// stderr one line each: a few are shown, then their number; the turn
// goes on to its end.
func TestCodexBackendGarbageFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary; skipped in -short mode")
	}
	r := runFlood(t, "garbage 100000")
	lines := strings.Count(r.stderr, "\n")
	t.Logf("%d stderr lines, peak RSS %d MiB", lines, r.maxRSS>>20)
	if stops := r.dones(); len(stops) != 1 || stops[0] != "completed" {
		t.Fatalf("done stop_reasons %q, want one completed\nstdout:\n%s\nstderr:\n%.4000s", stops, strings.Join(r.lines, "\n"), r.stderr)
	}
	if lines > 20 {
		t.Fatalf("%d stderr lines for 200,000 unusable lines, want a few:\n%.4000s", lines, r.stderr)
	}
	if !strings.Contains(r.stderr, "200000") {
		t.Fatalf("stderr does not count the 200,000 unusable lines:\n%s", r.stderr)
	}
	if !bytes.Contains([]byte(r.stderr), []byte("garbage line 0")) && !strings.Contains(r.stderr, "not a JSON object") {
		t.Fatalf("stderr does not show the first unusable lines:\n%s", r.stderr)
	}
}
