package view

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sebdah/goldie/v2"
	"golang.org/x/tools/txtar"
	"gopkg.in/yaml.v3"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/internal/fixture"
)

// transcriptCase is one real transcript of the repository and, when the
// repository has it, the stdin its client sent.
type transcriptCase struct {
	name    string
	path    string
	data    []byte // the transcript when it is a section of path; nil to read path
	stdin   []byte // nil when unknown
	virtual bool
}

// transcript returns the case's transcript.
func (tc transcriptCase) transcript(t *testing.T) []byte {
	t.Helper()
	if tc.data != nil {
		return tc.data
	}
	data, err := os.ReadFile(tc.path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// goldenTranscripts lists every golden transcript: the replays of the
// cassette library (stdin from each cassette's recorded commands) and the
// scripted sessions, whose archives golden/sessions/NAME.txtar hold the
// transcript beside the steps (stdin from those).
func goldenTranscripts(t *testing.T) []transcriptCase {
	t.Helper()
	root := fixture.Root()
	var out []transcriptCase
	for _, dir := range []string{"cassettes", "sessions"} {
		ext := ".golden"
		if dir == "sessions" {
			ext = ".txtar"
		}
		paths, err := filepath.Glob(filepath.Join(root, "golden", dir, "*"+ext))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no golden transcripts in golden/%s: %v", dir, err)
		}
		for _, p := range paths {
			name := strings.TrimSuffix(filepath.Base(p), ext)
			c := transcriptCase{name: dir + "/" + name, path: p}
			if dir == "cassettes" {
				c.virtual = true
				c.stdin = cassetteStdin(t, filepath.Join(root, "cassettes", name+".yaml"))
			} else {
				a, err := txtar.ParseFile(p)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range a.Files {
					switch f.Name {
					case "transcript":
						c.data = f.Data
					case "steps":
						c.stdin = stepsStdin(t, p, f.Data)
					}
				}
				if c.data == nil {
					t.Fatalf("%s: no transcript section", p)
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// cassetteStdin reads the client's commands recorded in a cassette.
func cassetteStdin(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var f struct {
		Session struct {
			Commands []struct {
				Line string `yaml:"line"`
			} `yaml:"commands"`
		} `yaml:"openmax"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var b bytes.Buffer
	for _, c := range f.Session.Commands {
		b.WriteString(c.Line + "\n")
	}
	return b.Bytes()
}

// stepsStdin rebuilds the stdin a session case's steps (from the archive
// at path) write: "> LINE", "> @raw HEX" (raw bytes) and "> @big N JSON" (a
// line of exactly N bytes).
func stepsStdin(t *testing.T, path string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, step := range strings.Split(string(data), "\n") {
		if step != ">" && !strings.HasPrefix(step, "> ") {
			continue
		}
		arg := strings.TrimPrefix(strings.TrimPrefix(step, ">"), " ")
		switch {
		case strings.HasPrefix(arg, "@raw "):
			raw, err := hex.DecodeString(strings.TrimPrefix(arg, "@raw "))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			b.Write(raw)
		case strings.HasPrefix(arg, "@big "):
			size, js, _ := strings.Cut(strings.TrimPrefix(arg, "@big "), " ")
			n, err := strconv.Atoi(size)
			if err != nil || !strings.HasPrefix(js, "{") || n < len(js)+10 {
				t.Fatalf("%s: bad @big step %q", path, step)
			}
			pad := n - len(js) - len(`"pad":"",`)
			b.WriteString(`{"pad":"` + strings.Repeat("x", pad) + `",` + js[1:])
		default:
			b.WriteString(arg)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// countLines counts the transcript's JSON lines of each type and its other
// lines, and returns the message_done texts whose tokens came with no other
// line between them.
func countLines(t *testing.T, data []byte) (map[string]int, []wire.MessageDone, int) {
	t.Helper()
	types := map[string]int{}
	var done []wire.MessageDone
	other := 0
	run, cut := false, false
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(l), &head) != nil {
			if !strings.HasPrefix(l, "exit: ") {
				other++
			}
			continue
		}
		types[head.Type]++
		switch head.Type {
		case "token":
			run = true
		case "message_done":
			var m wire.MessageDone
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			if !cut {
				done = append(done, m)
			}
			run, cut = false, false
		default:
			cut = cut || run
		}
	}
	return types, done, other
}

func render(t *testing.T, in []byte, opts Options) (string, Summary) {
	t.Helper()
	var out bytes.Buffer
	sum, err := Render(&out, bytes.NewReader(in), opts)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return out.String(), sum
}

// TestRenderEveryGoldenTranscript renders every golden transcript of the
// repository, with and without the client's stdin and colour, and checks
// that the view accounts for every line: turns, stop reasons, retries,
// protocol errors, the exit line, every reply's text and every prompt.
func TestRenderEveryGoldenTranscript(t *testing.T) {
	cases := goldenTranscripts(t)
	if len(cases) < 70 {
		t.Fatalf("found only %d golden transcripts", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.transcript(t)
			types, replies, other := countLines(t, data)
			for _, withStdin := range []bool{false, true} {
				opts := Options{Virtual: tc.virtual, Width: -1}
				if withStdin {
					if tc.stdin == nil {
						continue
					}
					opts.Stdin = bytes.NewReader(tc.stdin)
				}
				plain, sum := render(t, data, opts)
				opts.Color = true
				if withStdin {
					opts.Stdin = bytes.NewReader(tc.stdin)
				}
				colored, csum := render(t, data, opts)
				if got := stripANSI(colored); got != plain {
					t.Errorf("stdin=%v: the coloured render without its colours differs from the plain one:\n%s\n---\n%s", withStdin, got, plain)
				}
				if !reflect.DeepEqual(sum, csum) {
					t.Errorf("stdin=%v: summaries differ with colour: %+v vs %+v", withStdin, sum, csum)
				}
				checks := []struct {
					what      string
					got, want int
				}{
					{"turns", sum.Turns, types["budget"]},
					{"retries", sum.Retries, types["retry"]},
					{"protocol errors", sum.ProtocolErrors, types["protocol_error"]},
					{"error lines", sum.Errors, types["error"]},
					{"tool calls", sum.ToolCalls, types["tool_start"]},
					{"approvals", sum.Approvals, types["approval_request"]},
					{"lines that are not wire JSON", sum.NotWire, other},
					{"contract violations", sum.Violations, 0},
					{"lines over the cap", sum.TooLong, 0},
				}
				stops := 0
				for _, sc := range sum.Stops {
					stops += sc.N
				}
				checks = append(checks, struct {
					what      string
					got, want int
				}{"stop reasons", stops, types["done"]})
				for _, c := range checks {
					if c.got != c.want {
						t.Errorf("stdin=%v: %s: got %d, want %d", withStdin, c.what, c.got, c.want)
					}
				}
				if !sum.HasExit {
					t.Errorf("stdin=%v: the exit line was not seen", withStdin)
				}
				if !strings.Contains(plain, "── summary ─") {
					t.Errorf("stdin=%v: no summary", withStdin)
				}
				for _, m := range replies {
					for _, l := range strings.Split(m.Text, "\n") {
						if !strings.Contains(plain, clean(strings.TrimSpace(l))) {
							t.Errorf("stdin=%v: reply text %q is not shown", withStdin, l)
						}
					}
				}
				if withStdin {
					for _, l := range bytes.Split(tc.stdin, []byte("\n")) {
						cmd, err := wire.DecodeCommand(l)
						if u, ok := cmd.(wire.User); ok && err == nil && strings.TrimSpace(u.Text) != "" && !strings.Contains(plain, "  "+clean(u.Text)+"\n") {
							t.Errorf("the prompt %q is not shown", u.Text)
						}
					}
				}
			}
		})
	}
}

// TestPinnedRenders pins the view of a few transcripts with golden files
// under testdata (go test ./core/wire/view -update rewrites them).
func TestPinnedRenders(t *testing.T) {
	byName := map[string]transcriptCase{}
	for _, tc := range goldenTranscripts(t) {
		byName[tc.name] = tc
	}
	every := transcriptCase{name: "every_event", path: filepath.Join("testdata", "every_event.jsonl")}
	var err error
	if every.stdin, err = os.ReadFile(filepath.Join("testdata", "every_event.stdin")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		golden string
		tc     transcriptCase
		stdin  bool
		color  bool
	}{
		{"story", byName["cassettes/story"], true, false},
		{"story_no_stdin", byName["cassettes/story"], false, false},
		{"story_color", byName["cassettes/story"], true, true},
		{"thinking_voided_by_retry", byName["cassettes/thinking_voided_by_retry"], true, false},
		{"5xx_and_529", byName["cassettes/5xx_and_529"], true, false},
		{"openai_tool_round_trip", byName["cassettes/openai_tool_round_trip"], true, false},
		{"approval_approved", byName["sessions/approval_approved"], true, false},
		{"bad_lines", byName["sessions/bad_lines"], true, false},
		{"builtin_tools", byName["sessions/builtin_tools"], false, false},
		{"http_story", byName["sessions/http_story"], false, false},
		{"every_event", every, true, false},
	}
	g := goldie.New(t, goldie.WithFixtureDir("testdata"), goldie.WithNameSuffix(".golden"))
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			if tt.tc.path == "" {
				t.Fatalf("no transcript for %s", tt.golden)
			}
			data := tt.tc.transcript(t)
			opts := Options{Virtual: tt.tc.virtual, Color: tt.color}
			if tt.stdin {
				opts.Stdin = bytes.NewReader(tt.tc.stdin)
			}
			out, sum := render(t, data, opts)
			if sum.Violations != 0 {
				t.Errorf("%d contract violations", sum.Violations)
			}
			g.Assert(t, tt.golden, []byte(out))
		})
	}
}

// TestBadLines feeds lines that are not (good) wire lines: each is shown as
// such and counted, and the render goes on.
func TestBadLines(t *testing.T) {
	hello := `{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s1","version":"0.1.0","project":"/","continued":false}`
	tests := []struct {
		name    string
		line    string
		want    string // in the render
		notWire int
		violate int
	}{
		{"plain text", "hello there", `? line 2 is not a wire line (not JSON): hello there`, 1, 0},
		{"truncated JSON", `{"type":"token","te`, `(not JSON): {"type":"token","te`, 1, 0},
		{"array", `[1,2]`, `(not a JSON object): [1,2]`, 1, 0},
		{"no type", `{"text":"x"}`, `(no "type" field)`, 1, 0},
		{"type not a string", `{"type":7}`, `("type" is not a string)`, 1, 0},
		{"unknown type", `{"session_id":"s1","type":"teleport"}`, `(unknown type "teleport")`, 1, 0},
		{"bad field type", `{"session_id":"s1","type":"usage","prompt_tokens":"many","completion_tokens":1,"cached_tokens":null}`, `(a usage line with bad fields:`, 1, 0},
		{"invalid UTF-8", "{\"x\":\"\xff\"}", `(not valid UTF-8): {"x":"` + "\uFFFD" + `"}`, 1, 0},
		{"blank", "   ", "", 0, 0},
		{"outside a turn", `{"session_id":"s1","type":"token","text":"stray"}`, `⚠ not allowed here by the contract: token: token outside a turn`, 0, 1},
		{"terminal escape in text", `{"type":"protocol_error","message":"\u001b[2Jgone"}`, `⚠ protocol_error: \x1b[2Jgone`, 0, 0},
		{"long raw line", strings.Repeat("z", 500), "z… (300 more bytes)", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, sum := render(t, []byte(hello+"\n"+tt.line+"\n"), Options{})
			if !strings.Contains(out, tt.want) {
				t.Errorf("render lacks %q:\n%s", tt.want, out)
			}
			if strings.ContainsRune(out, 0x1b) {
				t.Errorf("an escape character reached the output:\n%q", out)
			}
			if sum.NotWire != tt.notWire || sum.Violations != tt.violate {
				t.Errorf("not wire %d, violations %d; want %d, %d", sum.NotWire, sum.Violations, tt.notWire, tt.violate)
			}
		})
	}
}

// endless yields n bytes of 'a' without holding them.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), e.n)
	for i := range k {
		p[i] = 'a'
	}
	e.n -= k
	return int(k), nil
}

// TestOversizedLineIsCut checks a line over the 8 MiB cap is reported with
// its size and the lines after it still render.
func TestOversizedLineIsCut(t *testing.T) {
	in := io.MultiReader(
		strings.NewReader(`{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s1","version":"0.1.0","project":"/","continued":false}`+"\n"),
		&endless{n: wire.MaxLine + 5},
		strings.NewReader("\n"+`{"type":"protocol_error","message":"still here"}`+"\n"),
	)
	var out bytes.Buffer
	sum, err := Render(&out, in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"? line 2 is 8,388,613 bytes, over the 8 MiB cap: cut, not shown", "still here", "1 line over the cap"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("render lacks %q:\n%s", want, out.String())
		}
	}
	if sum.TooLong != 1 || sum.Lines != 3 {
		t.Errorf("too long %d, lines %d; want 1, 3", sum.TooLong, sum.Lines)
	}
}

// TestRenderStreams checks that each line is rendered before the next one
// is read: a live stream shows up as it arrives.
func TestRenderStreams(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	result := make(chan error, 1)
	go func() {
		_, err := Render(outW, inR, Options{})
		outW.Close()
		result <- err
	}()
	out := bufio.NewReader(outR)
	readUntil := func(want string) {
		t.Helper()
		for {
			l, err := out.ReadString('\n')
			if strings.Contains(l, want) {
				return
			}
			if err != nil {
				t.Fatalf("output ended before %q: %v", want, err)
			}
		}
	}
	fmt.Fprintln(inW, `{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s1","version":"0.1.0","project":"/","continued":false}`)
	readUntil("session s1")
	fmt.Fprintln(inW, `{"session_id":"s1","type":"budget","used_tokens":10,"context_tokens":100}`)
	readUntil("── turn 1")
	fmt.Fprintln(inW, `{"session_id":"s1","type":"token","text":"first words "}`)
	readUntil("assistant")
	inW.Close()
	go io.Copy(io.Discard, out)
	if err := <-result; err != nil {
		t.Fatal(err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("connection lost") }

// TestIOErrors checks that read and write failures are returned wrapped.
func TestIOErrors(t *testing.T) {
	tests := []struct {
		name string
		w    io.Writer
		r    io.Reader
		want string
	}{
		{"write", failWriter{}, strings.NewReader("{}\n"), "view: write: disk full"},
		{"read", io.Discard, failReader{}, "view: read transcript: connection lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(tt.w, tt.r, Options{})
			if err == nil || err.Error() != tt.want || errors.Unwrap(err) == nil {
				t.Errorf("got %v, want %q (wrapped)", err, tt.want)
			}
		})
	}
}

// TestEveryWireTypeHasALayout renders one line of every event and line type
// core/wire defines, so a type added to the wire fails here until the view
// gives it a layout of its own.
func TestEveryWireTypeHasALayout(t *testing.T) {
	for _, d := range append(append([]*wire.Def{}, wire.Events...), wire.Lines...) {
		t.Run(d.Name, func(t *testing.T) {
			v := newRenderer(io.Discard, Options{})
			var b bytes.Buffer
			v.out = bufio.NewWriter(&b)
			v.render(d.Proto)
			v.endStream()
			v.out.Flush()
			if strings.Contains(b.String(), "• "+d.Name) {
				t.Errorf("%s falls through to the generic layout: %q", d.Name, b.String())
			}
		})
	}
}

// TestPrompts matches stdin to turns: refused users (empty text, or sent in
// flight) are skipped, and a protocol_error names the line it answers.
func TestPrompts(t *testing.T) {
	stdin := strings.Join([]string{
		`{"cmd":"user","text":"first"}`,
		`{"cmd":"user","text":"in flight"}`,
		`{"cmd":"user","text":""}`,
		`{"cmd":"reload"}`,
		`{"cmd":"user","text":"second"}`,
	}, "\n")
	out := strings.Join([]string{
		`{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s1","version":"0.1.0","project":"/","continued":false}`,
		`{"type":"protocol_error","message":"line 2: a turn is already running"}`,
		`{"session_id":"s1","type":"budget","used_tokens":1,"context_tokens":100}`,
		`{"session_id":"s1","type":"message_done","text":"one"}`,
		`{"session_id":"s1","type":"done","stop_reason":"stop"}`,
		`{"type":"protocol_error","message":"line 3: user: empty text"}`,
		`{"session_id":"s1","type":"done","stop_reason":"refused"}`,
		`{"type":"protocol_error","message":"line 4: reload: no"}`,
		`{"session_id":"s1","type":"budget","used_tokens":1,"context_tokens":100}`,
		`{"session_id":"s1","type":"message_done","text":"two"}`,
		`{"session_id":"s1","type":"done","stop_reason":"stop"}`,
		`{"session_id":"s1","type":"budget","used_tokens":1,"context_tokens":100}`,
		`{"session_id":"s1","type":"message_done","text":"three"}`,
		`{"session_id":"s1","type":"done","stop_reason":"stop"}`,
	}, "\n")
	got, sum := render(t, []byte(out), Options{Stdin: strings.NewReader(stdin)})
	wants := []string{
		"you (stdin line 2)\n  in flight\n⚠ not taken: line 2:",
		"── turn 1 ─",
		"you\n  first\n",
		"you (stdin line 3)\n  (empty)\n⚠ not taken: line 3:",
		"■ command ended: refused",
		"  in answer to: {\"cmd\":\"reload\"}",
		"── turn 2 ─",
		"you\n  second\n",
		"── turn 3 ─",
		"(stdin holds no user command for this turn)",
	}
	at := 0
	for _, w := range wants {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("render lacks %q after offset %d:\n%s", w, at, got)
		}
		at += i + len(w)
	}
	if sum.Turns != 3 || sum.Refused != 1 || sum.Stop("stop") != 3 {
		t.Errorf("summary %+v", sum)
	}
}

// TestWrap checks the streaming paragraph writer: words wrap at the width,
// explicit newlines and indentation stay, a chunk boundary inside a word
// does not split it, and control characters are made visible.
func TestWrap(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		width  int
		want   string
	}{
		{"wraps", []string{"aaa bbb ccc ddd"}, 9, "> aaa bbb\n> ccc ddd\n"},
		{"word split across chunks", []string{"aaa b", "bb ccc"}, 9, "> aaa bbb\n> ccc\n"},
		{"never wraps", []string{"aaa bbb ccc ddd"}, -1, "> aaa bbb ccc ddd\n"},
		{"long word", []string{"a verylongword b"}, 6, "> a\n> verylongword\n> b\n"},
		{"newlines and indent", []string{"x:\n\n    code()\ny"}, 40, "> x:\n\n>     code()\n> y\n"},
		{"leading space dropped", []string{" ended."}, 40, "> ended.\n"},
		{"control characters", []string{"a\x1b[31mb\x07"}, 40, `> a\x1b[31mb\x07` + "\n"},
		{"tab", []string{"a\tb"}, 40, "> a    b\n"},
		{"empty", nil, 40, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			w := bufio.NewWriter(&b)
			p := newPara(w, "> ", "> ", "", "", tt.width)
			for _, c := range tt.chunks {
				p.write(c)
			}
			p.close()
			w.Flush()
			if b.String() != tt.want {
				t.Errorf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
}

// TestIsTerminal checks the colour decision: only a character device, and
// never with NO_COLOR set.
func TestIsTerminal(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	regular, err := os.Create(filepath.Join(t.TempDir(), "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	closed, err := os.Create(filepath.Join(t.TempDir(), "closed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	tests := []struct {
		name    string
		f       *os.File
		noColor string
		want    bool
	}{
		{"character device", devNull, "", true},
		{"character device with NO_COLOR", devNull, "1", false},
		{"pipe", pw, "", false},
		{"regular file", regular, "", false},
		{"closed file", closed, "", false},
		{"nil", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tt.noColor)
			if got := IsTerminal(tt.f); got != tt.want {
				t.Errorf("IsTerminal = %v, want %v", got, tt.want)
			}
		})
	}
}
