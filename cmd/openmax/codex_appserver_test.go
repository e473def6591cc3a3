package main

// The codex app-server client (provider/codex) end to end: every scenario
// of replay/codexscenario driven against the real codex app-server
// (npm @openai/codex, offline: `openmax fake-provider --scenario` as its
// model on loopback, a dead proxy beyond it, a CODEX_HOME of its own), and
// every committed recording of them replayed through the real
// `openmax fake-app-server` binary.
//
// Recording: OPENMAX_RECORD_CODEX=1 go test ./cmd/openmax -run TestCodexAppServer
// writes each client's transcript to provider/codex/testdata/transcripts
// and each outcome to provider/codex/testdata/outcomes (then run
// go test ./provider/codex -run TestReplayGolden to check the replays).
// Without it the live outcome is checked against the committed one: a
// difference means codex changed, and the failure says to re-record.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/provider/codex"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/replay/codexscenario"
)

// codexTestdata is provider/codex/testdata, where the recordings live.
var codexTestdata = filepath.Join("..", "..", "provider", "codex", "testdata")

// recordCodexEnv, set to 1, makes TestCodexAppServer record.
const recordCodexEnv = "OPENMAX_RECORD_CODEX"

// liveCodex is a codexscenario.Harness running the real codex app-server:
// every client a new process on the same CODEX_HOME and HOME.
type liveCodex struct {
	codex, home, codexHome, work string

	mu      sync.Mutex
	clients []*codex.Client
	recs    []*codexscenario.Recording
	stderr  []*syncBuffer
}

func (h *liveCodex) Dir() string { return h.work }

func (h *liveCodex) Start(ctx context.Context, o codex.Options) (*codex.Client, error) {
	rec, stderr := &codexscenario.Recording{}, &syncBuffer{}
	o.Command = []string{h.codex}
	o.Dir = h.work
	o.Env = append(o.Env, codexscenario.OfflineEnv(h.home, h.codexHome)...) // the scenario's own first
	o.Transcript, o.Stderr = rec, stderr
	cl, err := codex.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients, h.recs, h.stderr = append(h.clients, cl), append(h.recs, rec), append(h.stderr, stderr)
	return cl, nil
}

// setUpHome writes the CODEX_HOME's config.toml for the model at base,
// with what the scenario adds: an MCP server, a plugin (installed with
// the real codex CLI), each running the stub MCP server of
// testdata/mcpserver.
func (h *liveCodex) setUpHome(t *testing.T, ctx context.Context, home codexscenario.Home, base string) {
	t.Helper()
	var mcp []string
	if home != (codexscenario.Home{}) {
		mcp = []string{testdataProgram(t, "mcpserver")}
	}
	cli := func(args ...string) error {
		cmd := exec.CommandContext(ctx, h.codex, args...)
		cmd.Dir = h.work
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, codexscenario.OfflineEnv(h.home, h.codexHome)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("codex %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := home.SetUp(h.codexHome, base, 2, mcp, t.TempDir(), cli); err != nil {
		t.Fatal(err)
	}
}

func (h *liveCodex) close(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cl := range h.clients {
		_ = cl.Close(ctx)
	}
}

// TestCodexAppServer runs each scenario against the real codex, in
// parallel, and checks (or with OPENMAX_RECORD_CODEX=1 records) its
// outcome; the interrupt's latency is logged.
func TestCodexAppServer(t *testing.T) {
	t.Parallel() // waits on child processes
	codexBin := codexBinary(t)
	bin := buildBinary(t)
	record := os.Getenv(recordCodexEnv) == "1"
	for _, sc := range codexscenario.All() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			model := filepath.Join(t.TempDir(), "model.yaml")
			if err := os.WriteFile(model, []byte(sc.Model), 0o644); err != nil {
				t.Fatal(err)
			}
			// compact's model requests are kept (record --proxy) to show
			// what codex sends after compacting.
			var fp *childServer
			var proxied *scripted
			base := ""
			if sc.Name == "compact" || sc.Name == "fork_tool" {
				proxied = serveScenario(t, ctx, bin, sc.Model)
				base = proxied.URL
			} else {
				fp = startServer(t, ctx, bin, "fake-provider", "--scenario", model)
				base = fp.URL
			}
			h := &liveCodex{codex: codexBin, home: t.TempDir(), codexHome: t.TempDir(), work: t.TempDir()}
			h.setUpHome(t, ctx, sc.Home, base)
			start := time.Now()
			out, err := sc.Run(ctx, h)
			h.close(ctx)
			elapsed := time.Since(start)
			if fp != nil {
				if code := fp.stop(t); code != 0 {
					t.Errorf("fake-provider exited %d:\n%s", code, fp.stderr)
				}
			} else if err == nil {
				if f := proxied.finish(t); sc.Name == "compact" {
					checkCompactedHistory(t, f)
				} else {
					checkToolsOffered(t, f, "openmax", "read_file")
				}
			}
			if err != nil {
				for i, e := range h.stderr {
					t.Logf("codex %d stderr:\n%s", i+1, e)
				}
				t.Fatalf("the scenario against the real codex: %v\nso far:\n%s", err, out.Summary)
			}
			if len(h.recs) != sc.Clients {
				t.Fatalf("the scenario started %d clients, its Clients says %d", len(h.recs), sc.Clients)
			}
			t.Logf("%s: %v against the real codex; latencies %v", sc.Name, elapsed.Round(time.Millisecond), out.Latencies)
			outcome := filepath.Join(codexTestdata, "outcomes", codexscenario.OutcomeFile(sc.Name))
			if record {
				for i, rec := range h.recs {
					path := filepath.Join(codexTestdata, "transcripts", codexscenario.TranscriptFile(sc.Name, i+1))
					if err := golden.File(path, "", rec.Bytes(), true); err != nil {
						t.Fatal(err)
					}
				}
				if err := golden.File(outcome, "", []byte(out.Summary), true); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := golden.File(outcome, "the real codex", []byte(out.Summary), false); err != nil {
				t.Errorf("%v\nThe real codex no longer does what was recorded. If the change is expected, re-record:\n"+
					"  %s=1 go test ./cmd/openmax -run 'TestCodexAppServer$'\n  go test ./provider/codex -run TestReplayGolden",
					err, recordCodexEnv)
			}
		})
	}
}

// TestCodexAppServerRecordingsThroughTheBinary replays each committed
// recording through `openmax fake-app-server` as the client's binary:
// the same outcome as in process, every line replayed.
func TestCodexAppServerRecordingsThroughTheBinary(t *testing.T) {
	t.Parallel() // waits on child processes
	bin := buildBinary(t)
	for _, sc := range codexscenario.All() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var files []string
			for n := 1; n <= sc.Clients; n++ {
				files = append(files, filepath.Join(codexTestdata, "transcripts", codexscenario.TranscriptFile(sc.Name, n)))
			}
			h, err := codexscenario.NewReplay(t.TempDir(), files)
			if errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%v (record it: %s=1 go test ./cmd/openmax -run 'TestCodexAppServer$')", err, recordCodexEnv)
			}
			if err != nil {
				t.Fatal(err)
			}
			h.Command = []string{bin, "fake-app-server"}
			out, err := sc.Run(ctx, h)
			if ferr := h.Finish(ctx); ferr != nil {
				err = errors.Join(err, ferr)
			}
			if err != nil {
				t.Fatalf("%v\nso far:\n%s", err, out.Summary)
			}
			want, err := os.ReadFile(filepath.Join(codexTestdata, "outcomes", codexscenario.OutcomeFile(sc.Name)))
			if err != nil {
				t.Fatal(err)
			}
			if out.Summary != string(want) {
				t.Errorf("%s", golden.Diff("golden", "through the binary", want, []byte(out.Summary)))
			}
		})
	}
}

// checkCompactedHistory: after thread/compact/start the thread remembers
// the conversation in summary. codex sent three model requests (the first
// turn, the compaction, the turn after it); the last carries the
// compaction's reply (the summary) instead of the first turn's answer.
func checkCompactedHistory(t *testing.T, f *cassette.File) {
	t.Helper()
	if len(f.Interactions) != 3 {
		t.Fatalf("codex made %d model requests, want 3 (turn, compaction, turn)", len(f.Interactions))
	}
	last := f.Interactions[2].Request.Body
	if !strings.Contains(last, "Summary: the user said hello.") {
		t.Errorf("the request after compaction does not carry the summary:\n%s", last)
	}
	if strings.Contains(last, "First answer.") {
		t.Errorf("the request after compaction still carries the first answer whole:\n%s", last)
	}
	if !strings.Contains(last, "Hello.") {
		t.Errorf("the request after compaction lost the user's earlier message:\n%s", last)
	}
}

// checkToolsOffered: every model request codex sent (fork_tool: the
// source thread's turn and each fork's) offers the model the client's
// dynamic tool, as a namespace tool holding it, though only thread/start
// sent the tools.
func checkToolsOffered(t *testing.T, f *cassette.File, namespace, tool string) {
	t.Helper()
	if len(f.Interactions) == 0 {
		t.Fatal("codex made no model requests")
	}
	for i, it := range f.Interactions {
		var body struct {
			Tools []struct {
				Type  string `json:"type"`
				Name  string `json:"name"`
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(it.Request.Body), &body); err != nil {
			t.Fatalf("model request %d: %v", i+1, err)
		}
		found, offered := false, []string{}
		for _, ns := range body.Tools {
			offered = append(offered, ns.Type+" "+ns.Name)
			for _, fn := range ns.Tools {
				found = found || (ns.Type == "namespace" && ns.Name == namespace && fn.Name == tool)
			}
		}
		if !found {
			t.Errorf("model request %d of %d does not offer %s.%s; it offers %v", i+1, len(f.Interactions), namespace, tool, offered)
		}
	}
}
