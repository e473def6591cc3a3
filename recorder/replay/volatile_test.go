package replay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/provider/codec"
)

func TestDefaultNormaliser(t *testing.T) {
	t.Setenv("HOME", "/srv/users/me")
	t.Setenv("TMPDIR", "/scratch/t")
	n := defaultNormaliser()
	tests := []struct{ in, want string }{
		{"Working directory: /home/alice/proj", "Working directory: <home>/proj"},
		{"memory at `/Users/bob/.claude/projects/x/memory/`.", "memory at `<home>/.claude/projects/x/memory/`."},
		{"cd /root && ls /root/x", "cd <home> && ls <home>/x"},
		{`C:\Users\carol\proj`, `<home>\proj`},
		{"HOME is /srv/users/me/a", "HOME is <home>/a"},
		{"/rootfs and /homework stay", "/rootfs and /homework stay"},
		{"memory at `/tmp/ccinv/h1/.claude/projects/-tmp-ccinv-proj/memory/`.", "memory at `<tmp>`."},
		{"(/var/folders/x1/abc/T/go-build1/a.txt)", "(<tmp>)"},
		{"in /scratch/t/run-42/home: ok", "in <tmp> ok"},
		{"/tmpfs and /work/tmp/x and file:///tmp/y stay", "/tmpfs and /work/tmp/x and file:///tmp/y stay"},
		{"session 363812DB-53e0-409e-b693-a96690434bff.", "session <uuid>."},
		{"id_363812db-53e0-409e-b693-a96690434bff", "id_<uuid>"},
		{"Today's date is 2026-12-02.", "Today's date is <date>."},
		{"at 2026-12-02T21:26:47.512Z, then 2026-12-03 10:00+01:00", "at <date>, then <date>"},
		{"model gpt-4o-2024-08-06 keeps its date", "model gpt-4o-2024-08-06 keeps its date"},
		{"/logs/2026-01-02.txt", "/logs/<date>.txt"},
		{"plain text", "plain text"},
		{"Chunk ID: b8375d\nWall time: 0.0012 seconds\nProcess exited with code 0\nOutput:\nok\n",
			"Chunk ID: <chunk>\nWall time: <seconds> seconds\nProcess exited with code 0\nOutput:\nok\n"},
		{"Chunk ID: 0a23c1\nWall time: 12 seconds\n", "Chunk ID: <chunk>\nWall time: <seconds> seconds\n"},
		{"Chunk ID: b8375d and no wall time stays", "Chunk ID: b8375d and no wall time stays"},
		{"Output:\nWall time: 3 seconds, Chunk ID: ab12\n", "Output:\nWall time: 3 seconds, Chunk ID: ab12\n"},
	}
	for _, tt := range tests {
		if got := n.str(tt.in); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// claudeLike is a request the way claude-code sends one: a per-run
// metadata.user_id and a system prompt naming HOME and the date.
func claudeLike(home, session, date string) string {
	b, _ := json.Marshal(map[string]any{
		"model":    "claude-x",
		"metadata": map[string]any{"user_id": `{"device_id":"` + session + `","session_id":"` + session + `"}`},
		"system":   []any{map[string]any{"type": "text", "text": "You have memory at " + home + "/.claude/memory/.\nToday's date is " + date + "."}},
		"messages": []any{map[string]any{"role": "user", "content": "say hi"}},
		"stream":   true,
	})
	return string(b)
}

func TestDefaultsMatchAcrossRuns(t *testing.T) {
	t.Setenv("HOME", "/srv/me")
	url := recordedBase + "/messages"
	rec := claudeLike("/home/alice", "0b8f0a3e-0000-4000-8000-000000000001", "2026-12-02")
	tests := []struct {
		name   string
		live   string
		opts   Options
		fields []string // nil: served
	}{
		{"identical", rec, Options{}, nil},
		{"another run, user and day", claudeLike("/home/bob", "7c1d2e3f-1111-4222-8333-444455556666", "2026-12-03"), Options{}, nil},
		{"this process's HOME", claudeLike("/srv/me", "x", "2026-12-03"), Options{}, nil},
		{"no defaults", claudeLike("/home/bob", "x", "2026-12-02"), Options{NoDefaults: true}, []string{"metadata.user_id", "system[0].text"}},
		{"no defaults, ignore given", claudeLike("/home/alice", "x", "2026-12-02"), Options{NoDefaults: true, Ignore: []string{"metadata"}}, nil},
		{"a real difference", strings.Replace(claudeLike("/home/bob", "x", "2026-12-03"), "say hi", "say bye", 1), Options{}, []string{"messages[0].content"}},
	}
	for _, tt := range tests {
		r := New(file(streamed(url, rec, chunks(0, 0, "ok"), nil)), tt.opts)
		resp, err := post(t, context.Background(), r, url, tt.live)
		if tt.fields == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				continue
			}
			resp.Body.Close()
			continue
		}
		var miss *MissError
		if !errors.As(err, &miss) || !reflect.DeepEqual(miss.Fields, tt.fields) {
			t.Errorf("%s: %v (fields %v, want %v)", tt.name, err, miss.Fields, tt.fields)
		}
	}
}

func TestMissesEventsAndSummary(t *testing.T) {
	url := recordedBase + "/chat/completions"
	f := file(
		streamed(url, chat("m", "one"), chunks(0, 0, "1"), nil),
		failed(url, chat("m", "two"), nil),
		streamed(url, chat("m", "three"), chunks(0, 0, "3"), nil),
	)
	var mu sync.Mutex
	var lines []string
	r := New(f, Options{MissAsResponse: true, OnRequest: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, e.String())
	}})
	for _, prompt := range []string{"one", "nine", "one"} {
		resp := mustPost(t, r, url, chat("m", prompt))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := []string{
		"request 0: POST /v1/chat/completions: served interaction 0 (200)",
		"request 1: POST /v1/chat/completions: MISS, nearest interaction 1 differs in messages[1].content",
		"request 2: POST /v1/chat/completions: MISS, identical to interaction 0, which was already served",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	misses := r.Misses()
	if len(misses) != 2 || misses[0].Request != 1 || misses[0].Nearest != 1 || misses[1].Request != 2 || !misses[1].Served {
		t.Errorf("misses %+v", misses)
	}
	if !errors.Is(misses[0], ErrNoMatch) {
		t.Errorf("a Miss is not ErrNoMatch: %v", misses[0])
	}
	if s := r.Summary(); s != "3 request(s): 1 served, 2 missed; 2 of 3 interaction(s) never requested: 1, 2" {
		t.Errorf("summary %q", s)
	}
	if u := r.Unused(); !reflect.DeepEqual(u, []int{1, 2}) {
		t.Errorf("unused %v", u)
	}
}

// TestMissShapes: a miss is answered in the error shape of the wire the
// request was meant for, and a request no wire claims in none of them.
func TestMissShapes(t *testing.T) {
	f := file(streamed(recordedBase+"/chat/completions", chat("a", "hi"), chunks(0, 0, "ok"), nil))
	tests := []struct {
		path   string
		header http.Header
		want   string // the error object's keys and values, as "k=v" sorted
	}{
		{"/v1/chat/completions", nil, "code=replay_miss param=<nil> type=invalid_request_error"},
		{"/v1/responses", nil, "code=replay_miss param=<nil> type=invalid_request_error"},
		{"/v1/messages", nil, "top=error type=invalid_request_error"},
		{"/v1/messages/count_tokens", nil, "top=error type=invalid_request_error"},
		{"/anything", http.Header{"Anthropic-Version": {"2023-06-01"}}, "top=error type=invalid_request_error"},
		{"/anything", http.Header{"anthropic-version": {"2023-06-01"}}, "top=error type=invalid_request_error"},
		{"/proxy/v1/messages?beta=true", nil, "top=error type=invalid_request_error"},
		// No wire claims these: no vendor's shape is guessed for them.
		{"/v1/messages-archive", nil, "unknown"},
		{"/v2/foo", nil, "unknown"},
	}
	base, _, client := serve(t, f, Options{})
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, base+tt.path, strings.NewReader(chat("b", "hi")))
		for k, v := range tt.header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if tt.want == "unknown" {
			msg, _ := body["message"].(string)
			why, _ := body["unknown_wire"].(string)
			if _, vendor := body["error"]; vendor || resp.StatusCode != MissStatus || body["code"] != "replay_miss" || body["replay"] == nil ||
				!strings.HasPrefix(msg, "replay: no recorded interaction matches POST ") ||
				!strings.HasPrefix(why, "POST "+tt.path+": "+codec.ErrUnknownWire.Error()+" (known: ") {
				t.Errorf("%s: %d %v", tt.path, resp.StatusCode, body)
			}
			continue
		}
		e, _ := body["error"].(map[string]any)
		var got []string
		if top, ok := body["type"]; ok {
			got = append(got, "top="+top.(string))
		}
		msg, _ := e["message"].(string)
		for k, v := range e {
			if k != "message" {
				got = append(got, k+"="+strings.TrimSpace(strings.Replace(strings.Trim(jsonText(v), `"`), "null", "<nil>", 1)))
			}
		}
		sort.Strings(got)
		if resp.StatusCode != MissStatus || strings.Join(got, " ") != tt.want || !strings.HasPrefix(msg, "replay: no recorded interaction matches POST ") || body["replay"] == nil {
			t.Errorf("%s: %d %v (message %q)", tt.path, resp.StatusCode, got, msg)
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// codexLike is a Responses request the way codex 0.169.0 sends the one
// after a shell tool call: per-run ids in prompt_cache_key,
// client_metadata (whose keys come in a random order) and the input items,
// its working folder and the date in the environment context, and the
// tool result's header with a random chunk id and the command's wall time.
func codexLike(session, cwd, date, chunk, wall string, reorder bool) string {
	meta := map[string]any{"session_id": session, "x-codex-turn-metadata": `{"session_id":"` + session + `","turn_started_at_unix_ms":1796296387528}`}
	if reorder {
		meta["thread_id"] = session
	}
	b, _ := json.Marshal(map[string]any{
		"model": "gpt-5-codex",
		"input": []any{
			map[string]any{"type": "message", "id": "msg_" + session, "role": "user", "content": []any{map[string]any{"type": "input_text",
				"text": "<environment_context>\n  <cwd>" + cwd + "</cwd>\n  <current_date>" + date + "</current_date>\n</environment_context>"}}},
			map[string]any{"type": "message", "id": "msg_" + session + "-2", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "run the probe"}}},
			map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_probe", "name": "exec_command", "arguments": `{"cmd":"echo probe"}`},
			map[string]any{"type": "function_call_output", "id": "fco_" + session, "call_id": "call_probe",
				"output": "Chunk ID: " + chunk + "\nWall time: " + wall + " seconds\nProcess exited with code 0\nOriginal token count: 3\nOutput:\nprobe\n"},
		},
		"prompt_cache_key": session,
		"client_metadata":  meta,
		"stream":           true,
		"store":            false,
	})
	return string(b)
}

func TestCodexRequestsMatchAcrossRuns(t *testing.T) {
	url := recordedBase + "/responses"
	rec := codexLike("01a23b9b-abaf-7811-a306-299463577611", "/tmp/TestCodex1/010", "2026-12-03", "b8375d", "0.0000", false)
	tests := []struct {
		name   string
		live   string
		opts   Options
		fields []string // nil: served
	}{
		{"identical", rec, Options{}, nil},
		{"another run", codexLike("01a23ba1-36bb-7bc0-a4ec-16aee0c089c7", "/tmp/TestCodex2/004", "2026-12-04", "0a23c1", "0.0012", true), Options{}, nil},
		{"no defaults", codexLike("01a23ba1-36bb-7bc0-a4ec-16aee0c089c7", "/tmp/TestCodex1/010", "2026-12-03", "0a23c1", "0.0000", false), Options{NoDefaults: true},
			[]string{"client_metadata.session_id", "client_metadata.x-codex-turn-metadata", "input[0].id", "input[1].id", "input[3].id", "input[3].output", "prompt_cache_key"}},
		{"another command output", strings.Replace(codexLike("x", "/tmp/a", "2026-12-03", "0a23c1", "0.0000", false), `\nprobe\n`, `\nprobe-2\n`, 1), Options{}, []string{"input[3].output"}},
	}
	for _, tt := range tests {
		r := New(file(streamed(url, rec, chunks(0, 0, "ok"), nil)), tt.opts)
		resp, err := post(t, context.Background(), r, url, tt.live)
		if tt.fields == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				continue
			}
			resp.Body.Close()
			continue
		}
		var miss *MissError
		if !errors.As(err, &miss) || !reflect.DeepEqual(miss.Fields, tt.fields) {
			t.Errorf("%s: %v (fields %v, want %v)", tt.name, err, miss.Fields, tt.fields)
		}
	}
}
