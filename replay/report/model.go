// Package report builds the static HTML report of recordings, replays and
// sweeps (`openmax report`): one model, the Go types of this file, and two
// renderings of it, html/template pages (html.go) and one JSON document
// (encoding/json, Site.WriteJSON).
//
// The model is read through the packages that already read recordings:
// recorder/cassette for the interactions and their chunks' arrival
// offsets, recorder/edit.Inspect for what each body says (the wire
// registry's reading, as `openmax cassette show` prints it), replay/tape
// for the engine's transcript of a replay (rendered as `openmax replay
// --view` does, by core/wire/view), and replay/sweep for a fault sweep.
// Nothing here parses a stream.
//
// The pages are self-contained: each carries its own style and a little
// script (zoom and filter only), loads nothing, and says everything
// without the script. Times are milliseconds from when the interaction's
// request went out.
package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// Format names the JSON document; a change to its field names bumps it.
const Format = "openmax-report/1"

// MaxMarks is how many chunk marks one interaction's timeline draws: a
// body of more chunks is drawn with each mark standing for several
// consecutive chunks, which the page says.
const MaxMarks = 2000

// Site is one report: the cassettes, and the suite or the sweep they were
// run as.
type Site struct {
	Format string `json:"format"`
	// Title names the report: the cassette or folder it was made from.
	Title     string      `json:"title"`
	Cassettes []*Cassette `json:"cassettes"`
	// Suite is set for a folder replayed against its golden files.
	Suite *Suite `json:"suite,omitempty"`
	// Sweep is set for a fault sweep (--sweep).
	Sweep *Sweep `json:"sweep,omitempty"`
}

// Cassette is one recording and its replay through the engine.
type Cassette struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Page is the cassette's page, relative to the report's folder.
	Page string `json:"page"`
	// Notes are what loading it said (a recording converted from another
	// tool's format).
	Notes []string `json:"notes,omitempty"`
	// Replay is how the replay went: "" when it ran, else why not.
	ReplayError string `json:"replay_error,omitempty"`
	Exit        int    `json:"exit"`
	// Problems are where the replay did not reproduce the recording.
	Problems []string `json:"problems,omitempty"`
	// Misses are the requests no recorded interaction answered.
	Misses []Miss `json:"misses,omitempty"`
	// Turns are the replay's turns, each with the interactions its
	// requests were served; turn 0 holds what came before the first turn,
	// and interactions the replay never requested are in Unused.
	Turns  []*Turn        `json:"turns"`
	Unused []*Interaction `json:"unused,omitempty"`
	// Summary is the transcript's closing summary, as the view writes it.
	Summary []Line `json:"summary,omitempty"`
	Chunks  int    `json:"chunks"` // recorded chunks over all interactions
}

// Turn is one admitted turn of the replay.
type Turn struct {
	Number int `json:"number"` // from 1; 0 is the session's opening
	// Transcript is the view of the turn (`openmax replay --view`), line
	// by line, each line in coloured spans.
	Transcript   []Line         `json:"transcript"`
	Interactions []*Interaction `json:"interactions"`
}

// Line is one line of a rendered transcript: spans of text, each with its
// class (thinking, tool, text, ...; "" for plain).
type Line []Span

// Span is a run of one colour.
type Span struct {
	Class string `json:"class,omitempty"`
	Text  string `json:"text"`
}

// String is the line's text.
func (l Line) String() string {
	s := ""
	for _, sp := range l {
		s += sp.Text
	}
	return s
}

// MarshalJSON writes a line as its text: the spans are for the page.
func (l Line) MarshalJSON() ([]byte, error) { return json.Marshal(l.String()) }

// Interaction is one request and the timeline of what came back.
type Interaction struct {
	Index   int     `json:"index"`
	StartMS float64 `json:"start_ms"` // when the request went out, from the recording's start
	Method  string  `json:"method"`
	Path    string  `json:"path"`
	Wire    string  `json:"wire"` // "" when no wire claims it
	// Request is the one-line summary of the request; Model, Tools and
	// Body (indented JSON when it is JSON) what it sent.
	Request string   `json:"request,omitempty"`
	Model   string   `json:"model,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	Body    string   `json:"body,omitempty"`
	// Status is the status line, "" when no response came.
	Status  string   `json:"status,omitempty"`
	Code    int      `json:"code"`
	Headers []Header `json:"headers,omitempty"`

	Chunks int `json:"chunks"` // recorded chunks
	Bytes  int `json:"bytes"`
	// Marks are the chunks as drawn: one per chunk, or per run of Stride
	// consecutive chunks when Downsampled.
	Marks       []Mark `json:"marks"`
	Downsampled bool   `json:"downsampled,omitempty"`
	Stride      int    `json:"stride"`
	// TTFTMS is when the first content (text, thinking or a tool call)
	// arrived; nil when none did.
	TTFTMS *float64 `json:"ttft_ms,omitempty"`
	// Gap is the longest wait between two chunks (or between the request
	// and the first), nil without chunks; Stalls the gaps of StallMS or
	// more.
	Gap    *Gap    `json:"longest_gap,omitempty"`
	Stalls []Gap   `json:"stalls,omitempty"`
	EndMS  float64 `json:"end_ms"`
	// Failure is how the exchange failed (a reset, a timeout, no response).
	Failure *Failure `json:"failure,omitempty"`
	// Truncated says a stream ended without its completion signal.
	Truncated bool `json:"truncated,omitempty"`
	// RetryAfterMS is the wait the response asked for (Retry-After,
	// retry-after-ms), drawn from the response's end.
	RetryAfterMS *float64 `json:"retry_after_ms,omitempty"`
	// ScaleMS is the timeline's span: the end, or the end of the
	// Retry-After wait when that is later.
	ScaleMS float64 `json:"scale_ms"`

	// What the reply says, as its wire reads it.
	Text      string     `json:"text,omitempty"`
	Thinking  string     `json:"thinking,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Finish    string     `json:"finish,omitempty"`
	Usage     string     `json:"usage,omitempty"`
	Errors    []string   `json:"errors,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	End       string     `json:"end"`
}

// Header is a response header that steers a client.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Mark is one chunk (or, downsampled, a run of them) on the timeline.
type Mark struct {
	Chunk int     `json:"chunk"` // the first chunk it stands for
	Count int     `json:"count"` // how many chunks (1 unless downsampled)
	AtMS  float64 `json:"at_ms"`
	Bytes int     `json:"bytes"`
	// Kind is what the chunk carries: text, thinking, tool, error or
	// other (the first of them in that order of precedence: error, tool,
	// thinking, text).
	Kind string `json:"kind"`
	Note string `json:"note"`
}

// Gap is a wait between two arrivals.
type Gap struct {
	FromMS float64 `json:"from_ms"`
	ToMS   float64 `json:"to_ms"`
	// Chunk is the chunk that ended the wait.
	Chunk int `json:"chunk"`
}

// MS is the gap's length.
func (g Gap) MS() float64 { return g.ToMS - g.FromMS }

// Failure is a recorded transport failure.
type Failure struct {
	Kind    string  `json:"kind"`
	Message string  `json:"message,omitempty"`
	AtMS    float64 `json:"at_ms"`
}

// ToolCall is a tool call of a reply.
type ToolCall struct {
	Name string `json:"name"`
	ID   string `json:"id,omitempty"`
	Args string `json:"args"`
}

// Miss is a request no recorded interaction answered, with the diff to
// the nearest.
type Miss struct {
	Request int    `json:"request"`
	Summary string `json:"summary"`
	Diff    string `json:"diff,omitempty"`
}

// Suite is a folder replayed against its golden files.
type Suite struct {
	Dir    string `json:"dir"`
	Golden string `json:"golden"`
	Rows   []Row  `json:"rows"`
	Passed int    `json:"passed"`
	Failed int    `json:"failed"`
	// Unchecked counts cassettes without a golden file: replayed, not
	// compared.
	Unchecked int `json:"unchecked"`
}

// The verdicts of a suite's row.
const (
	Pass      = "pass"
	Fail      = "fail"
	Unchecked = "no golden"
)

// Row is one cassette of a suite.
type Row struct {
	Name       string  `json:"name"`
	Page       string  `json:"page"`
	Verdict    string  `json:"verdict"`
	Reason     string  `json:"reason,omitempty"`
	Diff       string  `json:"diff,omitempty"` // the unified diff against the golden file
	DurationMS float64 `json:"duration_ms"`
}

// Sweep is a fault sweep: per cassette, the matrix of fault kinds by
// place.
type Sweep struct {
	Page      string         `json:"page"`
	Kinds     []string       `json:"kinds"`
	Variants  int            `json:"variants"`
	Failed    int            `json:"failed"`
	Cassettes []*SweepMatrix `json:"cassettes"`
}

// SweepMatrix is one cassette's sweep: Cells[kind][interaction].
type SweepMatrix struct {
	Cassette     string     `json:"cassette"`
	Page         string     `json:"page"` // the cassette's own page
	Interactions int        `json:"interactions"`
	Base         *Variant   `json:"unmodified"`
	Rows         []SweepRow `json:"rows"`
}

// SweepRow is one fault kind across the interactions.
type SweepRow struct {
	Kind  string       `json:"kind"`
	Cells [][]*Variant `json:"cells"` // per interaction, its places in order
}

// Variant is one replay of a sweep.
type Variant struct {
	Name        string   `json:"variant"`
	Kind        string   `json:"kind"`
	Interaction int      `json:"interaction"`
	Place       string   `json:"place"` // "before", "chunk K", "byte B"
	Page        string   `json:"page"`
	Stops       []string `json:"stops"`
	Retries     int      `json:"retries"`
	Exit        int      `json:"exit"`
	Failures    []string `json:"failures,omitempty"`
	// Transcript is the variant's replay as the view renders it, and
	// Faulted the timeline of the interaction the fault was put in.
	Transcript []Line       `json:"transcript,omitempty"`
	Faulted    *Interaction `json:"faulted,omitempty"`
}

// OK reports whether the variant broke no invariant.
func (v *Variant) OK() bool { return len(v.Failures) == 0 }

// WriteJSON writes the site as one JSON document.
func (s *Site) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
