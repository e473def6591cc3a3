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
		{"/v1/messages-archive", nil, "code=replay_miss param=<nil> type=invalid_request_error"},
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
