// Package codexscenario is the scripted sessions of the codex app-server
// client (provider/codex) that run both against the real codex and
// against the fake app-server replaying their recordings: one driver per
// scenario, making the same calls whichever peer answers, and returning
// an Outcome that a golden file pins.
//
// # The scenarios and their peers
//
// Each Scenario holds the model the real codex talks to (a script for
// `openmax fake-provider --scenario`, Responses wire) and a driver. The
// driver asks its Harness for clients (a second client is a second
// app-server process on the same CODEX_HOME: resume), writes the files
// its tools read into Harness.Dir, and waits on events, never on time. A
// scenario's Home is what its live run adds to CODEX_HOME (an MCP server,
// a plugin installed from a local marketplace), set up by Home.SetUp.
//
//   - cmd/openmax's TestCodexAppServer runs every driver against the real
//     codex (npm @openai/codex, offline: the fake provider on loopback, a
//     dead proxy beyond it). With OPENMAX_RECORD_CODEX=1 it records each
//     client's transcript into provider/codex/testdata/transcripts and
//     each outcome into provider/codex/testdata/outcomes; otherwise it
//     checks the live outcome against the committed one, so a codex that
//     changed fails with a diff and the advice to re-record.
//   - provider/codex's TestReplayGolden runs every driver against
//     replay/appserver.Serve playing the committed transcripts in process
//     (Replay here): the replay must end with nothing missed or left, the
//     outcome must equal the golden (-update rewrites it), and the
//     client's own transcript must equal the recording (CompareTranscripts).
//
// # Outcomes
//
// An Outcome's Summary is one line per thing the client saw or did, in
// order: the calls it made and what came back, and the notifications a
// client acts on (turn/started, turn/completed with its status and error,
// item/started and item/completed with the item's key fields and the
// agent text its deltas joined to, error with willRetry). The app-server's
// per-run values (thread, turn and user-message ids, times, paths, process
// ids) are left out, and so are the notifications whose place in the
// stream varies between runs of the same session (token usage, rate
// limits, thread status and settings, read state, warnings, thread/started),
// so a live run of an unchanged codex gives the same Summary.
package codexscenario

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openmax/openmax/provider/codex"
)

// Harness is the peer a driver runs against.
type Harness interface {
	// Dir is the session's working directory: every thread's cwd, and the
	// folder the scenario's tools read.
	Dir() string
	// Start starts the scenario's next client (the next app-server
	// process, or the next recorded transcript) with o's tools and client
	// info; the harness sets the command, directory, environment and
	// transcript. The harness closes the clients it started when the
	// scenario ends; a driver may close one earlier.
	Start(ctx context.Context, o codex.Options) (*codex.Client, error)
}

// Scenario is one scripted session.
type Scenario struct {
	Name string // the transcripts' and the golden's file name stem
	Doc  string // one sentence: what it shows
	// Model is the `openmax fake-provider --scenario` script the real
	// codex is pointed at.
	Model string
	// Clients is how many clients the driver starts (one transcript each).
	Clients int
	// Home is what a live run adds to its CODEX_HOME (MCP servers,
	// plugins); the zero Home adds nothing.
	Home Home
	// Run drives the session.
	Run func(ctx context.Context, h Harness) (Outcome, error)
}

// Outcome is what a driver saw.
type Outcome struct {
	// Summary is deterministic: the golden.
	Summary string
	// Latencies are timings measured on the way (not in Summary), such
	// as "interrupt": turn/interrupt sent → turn/completed read.
	Latencies map[string]time.Duration
}

// TranscriptFile is the file name of client n's (from 1) transcript of a
// scenario: name.jsonl, then name.client2.jsonl, ...
func TranscriptFile(name string, n int) string {
	if n == 1 {
		return name + ".jsonl"
	}
	return fmt.Sprintf("%s.client%d.jsonl", name, n)
}

// OutcomeFile is the file name of a scenario's golden outcome.
func OutcomeFile(name string) string { return name + ".golden" }

// Lookup returns the scenario named name.
func Lookup(name string) (Scenario, bool) {
	for _, s := range All() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// log is a driver's Summary under construction; tool handlers add to it
// from their own goroutines, so it keeps their lines apart (in Tools)
// where the order between goroutines would not be deterministic.
type log struct {
	mu        sync.Mutex
	lines     []string
	tools     []string
	latencies map[string]time.Duration
}

func newLog() *log { return &log{latencies: map[string]time.Duration{}} }

func (l *log) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// tool records a handler's call: kept sorted at the end of the summary.
func (l *log) tool(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tools = append(l.tools, fmt.Sprintf(format, args...))
}

func (l *log) latency(name string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latencies[name] = d
}

func (l *log) outcome() Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, s := range l.lines {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	if len(l.tools) > 0 {
		tools := append([]string(nil), l.tools...)
		sort.Strings(tools)
		b.WriteString("tool handler calls (sorted):\n")
		for _, s := range tools {
			b.WriteString("  ")
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
	lat := map[string]time.Duration{}
	for k, v := range l.latencies {
		lat[k] = v
	}
	return Outcome{Summary: b.String(), Latencies: lat}
}
