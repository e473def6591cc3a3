package appserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/lines"
	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/provider/codex"
)

// load parses a transcript of testdata.
func load(t testing.TB, name string) *Transcript {
	t.Helper()
	tr, err := ParseFile(filepath.Join("testdata", name), 0)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// sides splits a transcript into the client's lines as recorded and the
// app-server's lines as the client saw them (a line that was not JSON as
// its text).
func sides(t testing.TB, tr *Transcript) (sends, recvs []string) {
	t.Helper()
	for _, l := range tr.Lines {
		s := string(l.Msg)
		if l.Msg[0] == '"' {
			if err := json.Unmarshal(l.Msg, &s); err != nil {
				t.Fatal(err)
			}
		}
		if l.Dir == codex.DirSend {
			sends = append(sends, s)
		} else {
			recvs = append(recvs, s)
		}
	}
	return sends, recvs
}

// serveLines runs Serve with the client's lines all written up front and
// returns what it wrote, one string a line.
func serveLines(t testing.TB, tr *Transcript, client []string, opts Options) ([]string, error) {
	t.Helper()
	in := strings.NewReader(strings.Join(client, "\n") + "\n")
	if len(client) == 0 {
		in = strings.NewReader("")
	}
	var out bytes.Buffer
	err := Serve(context.Background(), tr, in, &out, opts)
	if out.Len() == 0 {
		return nil, err
	}
	if !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		t.Errorf("output does not end with a newline: %q", out.String())
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), err
}

// client is a client of another run than the recording: its own request
// ids and working directory.
type client struct {
	ids      map[string]string // recorded request id → the client's
	from, to string            // recorded cwd → the client's
}

var (
	leadingID  = regexp.MustCompile(`^\{"id":(-?[0-9]+|"[^"]*"),`)
	trailingID = regexp.MustCompile(`,"id":(-?[0-9]+|"[^"]*")\}$`)
)

// send is a recorded client line as this client sends it: its id, its
// paths, and its members re-encoded in another order.
func (c client) send(t testing.TB, line string) string {
	t.Helper()
	if !strings.HasPrefix(line, "{") {
		return line
	}
	v, err := decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if _, ok := m["method"]; ok {
		if id, ok := m["id"]; ok {
			b, _ := json.Marshal(id)
			if to, ok := c.ids[string(b)]; ok {
				m["id"] = json.RawMessage(to)
			}
		}
	}
	b, err := json.Marshal(c.paths(m))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// paths swaps the recorded cwd for the client's at the start of strings.
func (c client) paths(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = c.paths(e)
		}
	case []any:
		for i, e := range x {
			x[i] = c.paths(e)
		}
	case string:
		if c.from != "" && (x == c.from || strings.HasPrefix(x, c.from+"/")) {
			return c.to + x[len(c.from):]
		}
	}
	return v
}

// recv is a recorded app-server line as this client must see it: a
// response's id its own, the recorded cwd its own, nothing else changed.
func (c client) recv(line string) string {
	for _, re := range []*regexp.Regexp{leadingID, trailingID} {
		if m := re.FindStringSubmatchIndex(line); m != nil && !strings.Contains(line, `"method":`) {
			if to, ok := c.ids[line[m[2]:m[3]]]; ok {
				line = line[:m[2]] + to + line[m[3]:]
			}
		}
	}
	if c.from != "" {
		// Every occurrence: the transcripts have no other name starting
		// with the recorded cwd.
		line = strings.ReplaceAll(line, c.from, c.to)
	}
	return line
}

func (c client) sends(t testing.TB, recorded []string) []string {
	out := make([]string, len(recorded))
	for i, l := range recorded {
		out[i] = c.send(t, l)
	}
	return out
}

func (c client) recvs(recorded []string) []string {
	out := make([]string, len(recorded))
	for i, l := range recorded {
		out[i] = c.recv(l)
	}
	return out
}

// other is a client whose ids and cwd differ from basic.jsonl's.
var other = client{ids: map[string]string{"1": "101", "2": `"req-2"`, "3": "103"}, from: "/tmp/rec-work", to: "/tmp/TestReplay1234/001"}

// missAnswer decodes the error answer Serve wrote for a request that
// missed.
func missAnswer(t *testing.T, line string) (id string, code int, msg string) {
	t.Helper()
	var a struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		t.Fatalf("the miss answer %q: %v", line, err)
	}
	return string(a.ID), a.Error.Code, a.Error.Message
}

func TestServe(t *testing.T) {
	tr := load(t, "basic.jsonl")
	sends, recvs := sides(t, tr)
	if len(sends) != 5 || len(recvs) != 15 {
		t.Fatalf("basic.jsonl has %d sends and %d recvs", len(sends), len(recvs))
	}
	with := func(i int, s string) []string {
		c := append([]string(nil), sends...)
		c[i] = s
		return c
	}
	tests := []struct {
		name   string
		client []string
		want   []string // the lines written; nil: check says
		err    error
		check  func(t *testing.T, out []string, err error)
	}{{
		name:   "the recorded lines",
		client: sends,
		want:   recvs,
	}, {
		name:   "another run: its ids and its cwd",
		client: other.sends(t, sends),
		want:   other.recvs(recvs),
		check: func(t *testing.T, out []string, err error) {
			joined := strings.Join(out, "\n")
			for _, s := range []string{`{"id":101,"result"`, `{"id":"req-2","result"`, `{"id":103,"result"`,
				`"arguments":{"path":"/tmp/TestReplay1234/001/notes.txt"}`, `"instructionSources":["/tmp/TestReplay1234/001/AGENTS.md"]`,
				`"path":"/rec/home/sessions/rollout-thr-1.jsonl"`, `{"id":0,"method":"item/tool/call"`, `"remember the milk <&>."`} {
				if !strings.Contains(joined, s) {
					t.Errorf("the replies lack %s", s)
				}
			}
			if strings.Contains(joined, "/tmp/rec-work") {
				t.Errorf("a reply names the recorded cwd")
			}
		},
	}, {
		name:   "a group of client lines in another order",
		client: append([]string{sends[0], sends[2], sends[1]}, sends[3:]...),
		want:   recvs,
	}, {
		name:   "white space and member order do not matter",
		client: with(3, `{ "params": {"input": [{"text": "What does notes.txt say?", "type": "text"}], "threadId": "thr-1"}, "method": "turn/start", "id": 3 }`),
		want:   recvs,
	}, {
		name:   "the cwd learned from thread/start is used by later requests",
		client: with(3, `{"id":3,"method":"turn/start","params":{"threadId":"thr-1","input":[{"type":"text","text":"What does notes.txt say?"}]}}`),
		want:   recvs,
	}, {
		name:   "a request that differs",
		client: with(2, strings.Replace(other.send(t, sends[2]), `"gpt-5-codex"`, `"gpt-4o"`, 1)),
		err:    ErrMiss,
		check: func(t *testing.T, out []string, err error) {
			if len(out) != 2 || out[0] != recvs[0] {
				t.Fatalf("wrote %d lines: %q", len(out), out)
			}
			id, code, msg := missAnswer(t, out[1])
			if id != `"req-2"` || code != MissCode {
				t.Errorf("the answer has id %s and code %d, want the client's id \"req-2\" and %d", id, code, MissCode)
			}
			for _, s := range []string{"transcript line 4", "-    \"model\": \"gpt-5-codex\",", "+    \"model\": \"gpt-4o\",",
				"client line 3 (request thread/start id \"req-2\")"} {
				if !strings.Contains(msg, s) {
					t.Errorf("the answer's message lacks %q:\n%s", s, msg)
				}
			}
			if strings.Contains(msg, "-    \"cwd\"") {
				t.Errorf("the diff shows the cwd, which is learned:\n%s", msg)
			}
			var miss *MissError
			if !errors.As(err, &miss) || miss.Line != 4 || miss.ClientLine != 3 || AnswerPrefix+err.Error() != msg {
				t.Errorf("error %v, want a *MissError at transcript line 4, client line 3, worded as the answer", err)
			}
		},
	}, {
		name:   "a notification that differs is not answered",
		client: with(1, `{"method":"initialised"}`),
		err:    ErrMiss,
		want:   recvs[:1],
	}, {
		name:   "a tool result that differs is not answered",
		client: with(4, `{"id":0,"result":{"success":false,"contentItems":[{"type":"inputText","text":"remember the milk"}]}}`),
		err:    ErrMiss,
		want:   recvs[:9],
		check: func(t *testing.T, out []string, err error) {
			if !strings.Contains(err.Error(), "-    \"success\": true") || !strings.Contains(err.Error(), "+    \"success\": false") {
				t.Errorf("error %v lacks the diff", err)
			}
		},
	}, {
		name:   "a tool result for another server request",
		client: with(4, `{"id":1,"result":{"success":true,"contentItems":[{"type":"inputText","text":"remember the milk"}]}}`),
		err:    ErrMiss,
		want:   recvs[:9],
	}, {
		name:   "a line that is not JSON",
		client: with(0, "hello"),
		err:    ErrMiss,
		check: func(t *testing.T, out []string, err error) {
			if len(out) != 0 || !strings.Contains(err.Error(), "+(not JSON) hello") {
				t.Errorf("wrote %q, error %v", out, err)
			}
		},
	}, {
		name:   "a request after the end of the transcript",
		client: append(append([]string(nil), sends...), `{"id":9,"method":"thread/read","params":{"threadId":"thr-1"}}`),
		err:    ErrMiss,
		check: func(t *testing.T, out []string, err error) {
			if len(out) != len(recvs)+1 || strings.Join(out[:len(recvs)], "\n") != strings.Join(recvs, "\n") {
				t.Fatalf("wrote %q", out)
			}
			id, _, msg := missAnswer(t, out[len(recvs)])
			if id != "9" || !strings.Contains(msg, "after the end of the transcript") {
				t.Errorf("answer %s %q", id, msg)
			}
		},
	}, {
		name:   "the client closes its stdin early",
		client: sends[:1],
		want:   recvs[:1],
		err:    ErrLeftover,
		check: func(t *testing.T, out []string, err error) {
			var left *LeftoverError
			if !errors.As(err, &left) || len(left.Lines) != 18 || left.Lines[0] != 3 || left.Sends != 4 {
				t.Fatalf("error %v", err)
			}
			if !strings.Contains(err.Error(), "line 3 (send notification initialized)") || !strings.Contains(err.Error(), "... and 8 more") {
				t.Errorf("error %v", err)
			}
		},
	}, {
		name:   "the client closes its stdin at once",
		client: nil,
		err:    ErrLeftover,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := serveLines(t, tr, tt.client, Options{})
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if tt.want != nil && strings.Join(out, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("wrote\n%s\nwant\n%s", strings.Join(out, "\n"), strings.Join(tt.want, "\n"))
			}
			if tt.check != nil {
				tt.check(t, out, err)
			}
		})
	}
}

// TestRealTranscripts replays transcripts of the real codex 0.169.0 to a
// client of another run: other request ids, another working directory.
func TestRealTranscripts(t *testing.T) {
	for _, tt := range []struct {
		file, cwd string
	}{
		{"codex-basic.jsonl", "/tmp/h/codex-research/runs/basic/work"},
		{"codex-tool-ns.jsonl", "/tmp/h/codex-research/runs/tool_ns/work"},
		{"codex-edge.jsonl", "/tmp/h/codex-research/runs/edge/work"},
		// Recorded by the provider/codex client itself: three turns, the
		// second calling a dynamic tool, the third running a command whose
		// output names the cwd.
		{"codex-go-client.jsonl", "/tmp/e2e-1612473067/work1"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			tr := load(t, tt.file)
			sends, recvs := sides(t, tr)
			c := client{ids: map[string]string{}, from: tt.cwd, to: t.TempDir()}
			for _, l := range tr.Lines {
				if l.Dir == codex.DirSend && l.kind == kindRequest {
					c.ids[l.id] = fmt.Sprintf(`"c-%s"`, l.id)
				}
			}
			out, err := serveLines(t, tr, c.sends(t, sends), Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := c.recvs(recvs)
			if strings.Join(out, "\n") != strings.Join(want, "\n") {
				t.Errorf("wrote\n%s\nwant\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"))
			}
			if strings.Contains(strings.Join(out, "\n"), tt.cwd) {
				t.Errorf("a reply names the recorded cwd")
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		want       string
	}{
		{"not JSON", `{"dir":"send","msg":{}}` + "\nhello\n", 2, "not a {\"dir\",\"msg\"} object"},
		{"no dir", `{"msg":{}}`, 1, `dir is ""`},
		{"another dir", `{"dir":"both","msg":{}}`, 1, `dir is "both"`},
		{"no msg", `{"dir":"recv"}`, 1, "no msg"},
		{"another member", `{"dir":"recv","msg":{},"at":3}`, 1, `unknown field "at"`},
		{"two values", `{"dir":"recv","msg":{}} {"dir":"recv","msg":{}}`, 1, "more than one JSON value"},
		{"a method that is not a string", "\n\n" + `{"dir":"send","msg":{"id":1,"method":7}}`, 3, "method is not a string"},
		{"an array", `[]`, 1, "not a {\"dir\",\"msg\"} object"},
		{"two dirs", `{"dir":"send","dir":"recv","msg":{}}`, 1, `two "dir" members`},
		{"two msgs", `{"dir":"send","msg":{},"msg":{}}`, 1, `two "msg" members`},
		{"a dir that is not a string", `{"dir":1,"msg":{}}`, 1, "dir is 1, not a string"},
		{"broken JSON", `{"dir":"send","msg":{]}`, 1, "not a {\"dir\",\"msg\"} object: invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.text), 0)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != tt.line || !strings.Contains(err.Error(), tt.want) ||
				!strings.HasPrefix(err.Error(), fmt.Sprintf("transcript line %d: ", tt.line)) {
				t.Errorf("error %v, want line %d and %q", err, tt.line, tt.want)
			}
		})
	}
	if _, err := ParseFile(filepath.Join(t.TempDir(), "none.jsonl"), 0); err == nil {
		t.Error("a missing file parsed")
	}
}

func TestParseKeepsLines(t *testing.T) {
	tr, err := Parse(strings.NewReader("\n"+`{"dir":"recv","msg":"not json"}`+"\r\n  \n"+`{"msg": {"id": 1, "result": {}}, "dir": "recv"}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Lines) != 2 || tr.Lines[0].Num != 2 || tr.Lines[1].Num != 4 || string(tr.Lines[1].Msg) != `{"id":1,"result":{}}` ||
		tr.Lines[0].kind != kindRaw || tr.Lines[1].kind != kindResponse || tr.Lines[1].id != "1" {
		t.Errorf("parsed %+v", tr.Lines)
	}
}

func TestOversizedLines(t *testing.T) {
	long := `{"dir":"recv","msg":"` + strings.Repeat("x", 200) + `"}`
	_, err := Parse(strings.NewReader(`{"dir":"recv","msg":{}}`+"\n"+long+"\n"), 100)
	var pe *ParseError
	var tl *lines.TooLongError
	if !errors.As(err, &pe) || pe.Line != 2 || !errors.As(err, &tl) || !strings.Contains(err.Error(), "longer than the 100-byte limit") {
		t.Fatalf("error %v", err)
	}

	tr := load(t, "basic.jsonl")
	sends, recvs := sides(t, tr)
	pad := `{"method":"initialized","params":{"pad":"` + strings.Repeat("x", 300) + `"}}`
	client := append([]string{sends[0], pad}, sends[2:]...)
	out, err := serveLines(t, tr, client, Options{MaxLine: 250})
	var miss *MissError
	if !errors.As(err, &miss) || miss.ClientLine != 2 || !strings.Contains(err.Error(), fmt.Sprintf("client line 2: line is %d bytes, longer than the 250-byte limit", len(pad))) {
		t.Fatalf("error %v", err)
	}
	if strings.Join(out, "\n") != recvs[0] {
		t.Errorf("wrote %q", out)
	}
}

// TestClientNeverReads: a client that stops reading blocks the writes;
// cancelling ends Serve, and its goroutines end once the pipes are
// closed.
func TestClientNeverReads(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"dir":"send","msg":{"id":1,"method":"initialize"}}` + "\n")
	for i := range 1000 {
		fmt.Fprintf(&b, `{"dir":"recv","msg":{"method":"item/agentMessage/delta","params":{"delta":"%d"}}}`+"\n", i)
	}
	b.WriteString(`{"dir":"send","msg":{"id":2,"method":"turn/start"}}` + "\n")
	tr, err := Parse(strings.NewReader(b.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		write bool // the client sends its first line
	}{{"blocked writing", true}, {"blocked reading", false}} {
		t.Run(tt.name, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			s := newServer(tr, inR, outW, Options{})
			done := make(chan error, 1)
			go func() { done <- s.run(ctx) }()
			if tt.write {
				if _, err := io.WriteString(inW, `{"id":1,"method":"initialize"}`+"\n"); err != nil {
					t.Fatal(err)
				}
				// One line read proves the writes started; then the client
				// stops reading with 999 lines to go.
				if _, err := outR.Read(make([]byte, 10)); err != nil {
					t.Fatal(err)
				}
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Serve returned %v, want context.Canceled", err)
			}
			inW.Close()
			outR.Close()
			s.wg.Wait() // hangs (and the test times out) if a goroutine leaked
		})
	}
}

// TestDeterminism: the same transcript and client lines give the same
// bytes, run after run, for a replay and for a miss.
func TestDeterminism(t *testing.T) {
	tr := load(t, "codex-tool-ns.jsonl")
	sends, _ := sides(t, tr)
	c := client{ids: map[string]string{"1": "11", "2": "12", "3": "13"}, from: "/tmp/h/codex-research/runs/tool_ns/work", to: "/tmp/x"}
	good := c.sends(t, sends)
	bad := append([]string(nil), good...)
	bad[len(bad)-1] = strings.Replace(bad[len(bad)-1], "hi from notes", "hi from elsewhere", 1)
	for _, client := range [][]string{good, bad} {
		var first []string
		var firstErr string
		for i := range 200 {
			out, err := serveLines(t, tr, client, Options{})
			errText := fmt.Sprint(err)
			if i == 0 {
				first, firstErr = out, errText
				continue
			}
			if strings.Join(out, "\n") != strings.Join(first, "\n") || errText != firstErr {
				t.Fatalf("run %d differs from the first", i)
			}
		}
	}
}

// TestHeavyLargeTranscript: 100k lines, mostly notifications as in a real
// transcript, with the client's ids and cwd differing from the
// recording's. (A size test: the race detector made it 15 s of CI; the
// smaller tests here run Serve's goroutines under it.)
func TestHeavyLargeTranscript(t *testing.T) {
	rapidchecks.HeavyUnderRace(t)
	var b, want, client strings.Builder
	b.WriteString(`{"dir":"send","msg":{"id":0,"method":"thread/start","params":{"cwd":"/rec/w"}}}` + "\n")
	b.WriteString(`{"dir":"recv","msg":{"id":0,"result":{"cwd":"/rec/w"}}}` + "\n")
	client.WriteString(`{"id":1000000,"method":"thread/start","params":{"cwd":"/cli/w"}}` + "\n")
	want.WriteString(`{"id":1000000,"result":{"cwd":"/cli/w"}}` + "\n")
	for j := range 8 {
		fmt.Fprintf(&b, `{"dir":"recv","msg":{"method":"warning","params":{"message":"%d"}}}`+"\n", j)
		fmt.Fprintf(&want, `{"method":"warning","params":{"message":"%d"}}`+"\n", j)
	}
	for i := 1; i < 10000; i++ {
		fmt.Fprintf(&b, `{"dir":"send","msg":{"id":%d,"method":"thread/read","params":{"path":"/rec/w/%d"}}}`+"\n", i, i)
		fmt.Fprintf(&b, `{"dir":"recv","msg":{"id":%d,"result":{"path":"/rec/w/%d"}}}`+"\n", i, i)
		fmt.Fprintf(&client, `{"id":%d,"method":"thread/read","params":{"path":"/cli/w/%d"}}`+"\n", i+1000000, i)
		fmt.Fprintf(&want, `{"id":%d,"result":{"path":"/cli/w/%d"}}`+"\n", i+1000000, i)
		for j := range 8 {
			fmt.Fprintf(&b, `{"dir":"recv","msg":{"method":"item/agentMessage/delta","params":{"itemId":"msg-%d","delta":"%d, /rec/w/%d"},"emittedAtMs":%d}}`+"\n", i, j, j, i)
			fmt.Fprintf(&want, `{"method":"item/agentMessage/delta","params":{"itemId":"msg-%d","delta":"%d, /cli/w/%d"},"emittedAtMs":%d}`+"\n", i, j, j, i)
		}
	}
	tr, err := Parse(strings.NewReader(b.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Lines) != 100000 {
		t.Fatalf("%d lines", len(tr.Lines))
	}
	var out bytes.Buffer
	if err := Serve(context.Background(), tr, strings.NewReader(client.String()), &out, Options{}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Split(out.String(), "\n"), strings.Split(want.String(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("line %d of %d is\n%s\nwant\n%s", i+1, len(want), got[i], want[i])
			}
		}
		t.Fatalf("wrote %d lines, want %d", len(got), len(want))
	}
}

// TestClientWritesAhead: a client that writes all its lines before it
// reads a reply, over unbuffered pipes, is not deadlocked: the fake
// keeps reading while its replies wait to be read.
func TestClientWritesAhead(t *testing.T) {
	var b strings.Builder
	var client, want []string
	for i := range 200 {
		fmt.Fprintf(&b, `{"dir":"send","msg":{"id":%d,"method":"thread/read","params":{"n":%d}}}`+"\n", i, i)
		client = append(client, fmt.Sprintf(`{"id":%d,"method":"thread/read","params":{"n":%d}}`, i, i))
		for j := range 20 {
			line := fmt.Sprintf(`{"method":"item/agentMessage/delta","params":{"delta":"%d.%d %s"}}`, i, j, strings.Repeat("z", 100))
			fmt.Fprintf(&b, `{"dir":"recv","msg":%s}`+"\n", line)
			want = append(want, line)
		}
	}
	tr, err := Parse(strings.NewReader(b.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// A bound on a deadlock only, never reached by a passing run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, tr, inR, outW, Options{})
		outW.Close()
	}()
	for _, l := range client {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	inW.Close()
	got, err := io.ReadAll(outR)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if string(got) != strings.Join(want, "\n")+"\n" {
		t.Error("the replies differ from the recorded ones")
	}
}
