package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/edit"
)

// libraryRecordings are every recording of the library, cassettes/ and
// the real ones in cassettes/real (an httprr trace among them).
func libraryRecordings(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.yaml", "real/*.yaml", "real/*.httprr"} {
		m, err := filepath.Glob(filepath.Join(libraryDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 50 {
		t.Fatalf("only %d recordings in the library", len(files))
	}
	return files
}

// TestCassetteDiffSameIsQuiet: every library recording diffed against
// itself, through the binary, exits 0 and prints nothing; with --json it
// prints a report that says same, with no changes.
func TestCassetteDiffSameIsQuiet(t *testing.T) {
	for _, f := range libraryRecordings(t) {
		stdout, stderr, code := runBinary(t, "cassette", "diff", f, f)
		if code != 0 || stdout != "" {
			t.Errorf("diff %s with itself: exit %d, stdout %q, stderr %q; want exit 0 and nothing", f, code, stdout, stderr)
		}
		stdout, stderr, code = runBinary(t, "cassette", "diff", "--json", f, f)
		var r edit.DiffReport
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 || !r.Same || len(r.Interactions) != 0 || len(r.Session) != 0 {
			t.Errorf("diff --json %s with itself: exit %d, %v, stdout %q, stderr %q", f, code, err, stdout, stderr)
		}
	}
}

// rewrite replaces old with new in the request body (where "request") or
// in the response body and every chunk (where "response") of interaction
// i, failing when old is not there.
func rewrite(t *testing.T, f *cassette.File, i int, where, old, new string) {
	t.Helper()
	it := f.Interactions[i]
	found := false
	sub := func(s *string) {
		if strings.Contains(*s, old) {
			found = true
			*s = strings.ReplaceAll(*s, old, new)
		}
	}
	switch where {
	case "request":
		sub(&it.Request.Body)
	case "response":
		sub(&it.Response.Body)
		if it.Stream != nil {
			for k := range it.Stream.Chunks {
				sub(&it.Stream.Chunks[k].Data)
			}
		}
	}
	if !found {
		t.Fatalf("interaction %d's %s has no %q", i, where, old)
	}
}

// TestCassetteDiffNamesEachChange: a library cassette diffed against an
// edited copy, through the binary, exits 1 and names each change, in the
// human report and in the --json one, on every wire: a changed prompt, a
// changed tool, a changed finish, a changed usage, an added fault (a
// reset mid-stream, and a 429 before the first request, which shifts the
// pairing by one and makes the counts differ).
func TestCassetteDiffNamesEachChange(t *testing.T) {
	type want struct {
		index   int
		section string // request, response, timing
		what    string
		a, b    string // "" for absent
	}
	for _, tt := range []struct {
		name, file string
		edit       func(t *testing.T, f *cassette.File)
		inject     string // an op for cassette inject, instead of edit
		wants      []want
		human      []string
	}{
		{name: "prompt/openai", file: "openai_tool_round_trip.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "request", `"content":"Hello"`, `"content":"Hello there"`)
			},
			wants: []want{{0, "request", "user text", `"Hello"`, `"Hello there"`}},
			human: []string{`#0: POST /v1/chat/completions`, `request user text: "Hello" → "Hello there"`}},
		{name: "prompt/anthropic", file: "anthropic_tool_round_trip.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "request", `"text":"Hello"`, `"text":"Hello there"`)
			},
			wants: []want{{0, "request", "user text", `"Hello"`, `"Hello there"`}}},
		{name: "prompt/responses", file: "responses_tool_round_trip.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 1, "request", `"text":"Hello"`, `"text":"Hello there"`)
			},
			wants: []want{{1, "request", "user text", `"Hello"`, `"Hello there"`}}},
		{name: "prompt/bedrock", file: "bedrock_tool_round_trip.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "request", `"text":"Hello"`, `"text":"Hello there"`)
			},
			wants: []want{{0, "request", "user text", `"Hello"`, `"Hello there"`}}},
		{name: "tool/openai", file: "openai_tool_round_trip.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 1, "request", "returns its arguments", "echoes its arguments")
			},
			wants: []want{{1, "request", "tool echo_args", `description "returns its arguments", schema {"type":"object"}`, `description "echoes its arguments", schema {"type":"object"}`}},
			human: []string{`request tool echo_args: description "returns its arguments"`}},
		{name: "tool/anthropic", file: "anthropic_tool_round_trip.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "request", `"name":"echo_args",`, `"name":"echo",`)
			},
			wants: []want{{0, "request", "tool echo_args", `description "returns its arguments", schema {"type":"object"}`, ""}, {0, "request", "tool echo", "", `description "returns its arguments", schema {"type":"object"}`}}},
		{name: "tool/responses", file: "responses_tool_round_trip.yaml",
			edit:  func(t *testing.T, f *cassette.File) { rewrite(t, f, 0, "request", "returns its arguments", "echoes") },
			wants: []want{{0, "request", "tool echo_args", `description "returns its arguments", schema {"type":"object"}`, `description "echoes", schema {"type":"object"}`}}},
		{name: "tool/bedrock", file: "bedrock_tool_round_trip.yaml",
			edit:  func(t *testing.T, f *cassette.File) { rewrite(t, f, 0, "request", "returns its arguments", "echoes") },
			wants: []want{{0, "request", "tool echo_args", `description "returns its arguments", schema {"type":"object"}`, `description "echoes", schema {"type":"object"}`}}},
		{name: "params/openai", file: "openai_plain.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "request", `"model":"gpt-4o-mini",`, `"model":"gpt-4o-mini","temperature":0.2,`)
			},
			wants: []want{{0, "request", "body temperature", "", "0.2"}},
			human: []string{"request body temperature: added 0.2"}},
		{name: "model/anthropic", file: "anthropic_plain.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "request", `"model":"claude-sonnet-4-5"`, `"model":"claude-opus-4-1"`)
			},
			wants: []want{{0, "request", "model", `"claude-sonnet-4-5"`, `"claude-opus-4-1"`}},
			human: []string{`request model: "claude-sonnet-4-5" → "claude-opus-4-1"`}},
		{name: "finish/openai", file: "openai_plain.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "response", `"finish_reason":"stop"`, `"finish_reason":"length"`)
			},
			wants: []want{{0, "response", "finish", `"stop"`, `"length"`}},
			human: []string{`response finish: "stop" → "length"`}},
		{name: "finish/anthropic", file: "anthropic_plain.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "response", `"stop_reason":"end_turn"`, `"stop_reason":"max_tokens"`)
			},
			wants: []want{{0, "response", "finish", `"end_turn"`, `"max_tokens"`}}},
		{name: "text/responses", file: "responses_plain.yaml",
			edit:  func(t *testing.T, f *cassette.File) { rewrite(t, f, 0, "response", `Hello from`, `Hi from`) },
			wants: []want{{0, "response", "text", `"Hello from the Responses API."`, `"Hi from the Responses API."`}}},
		{name: "usage/openai", file: "openai_plain.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "response", `"completion_tokens":6,"total_tokens":17`, `"completion_tokens":9,"total_tokens":20`)
			},
			wants: []want{{0, "response", "usage", "11 in, 6 out, 17 total", "11 in, 9 out, 20 total"}},
			human: []string{"response usage: 11 in, 6 out, 17 total → 11 in, 9 out, 20 total"}},
		{name: "usage/anthropic", file: "anthropic_plain.yaml",
			edit: func(t *testing.T, f *cassette.File) {
				rewrite(t, f, 0, "response", `"output_tokens":6`, `"output_tokens":8`)
			},
			wants: []want{{0, "response", "usage", "11 in, 6 out, 17 total", "11 in, 8 out, 19 total"}}},
		{name: "reset/openai", file: "openai_plain.yaml", inject: "reset@0:byte=300",
			wants: []want{{0, "response", "end", "clean", "reset"}, {0, "response", "finish", `"stop"`, ""}, {0, "response", "signal", "[DONE]", "none"}},
			human: []string{"response end: clean → reset", "response header x-openmax-injected: added reset@0:byte=300"}},
		{name: "reset/bedrock", file: "bedrock_plain.yaml", inject: "reset@0:byte=200",
			wants: []want{{0, "response", "end", "clean", "reset"}}},
		{name: "429/anthropic", file: "anthropic_plain.yaml", inject: "429@0:retry-after=3",
			wants: []want{{0, "response", "status", "200 OK", "429 Too Many Requests"}, {0, "response", "header retry-after", "", "3"},
				{0, "response", "error", "", `"rate_limit_error: Rate limit exceeded"`}},
			human: []string{"the interaction counts differ: 1 in A, 2 in B", "#1: POST /v1/messages (only in B: A has no interaction 1)", "response status: 200 OK → 429 Too Many Requests"}},
		{name: "stream-error/responses", file: "responses_plain.yaml", inject: "stream-error@0:chunk=0",
			wants: []want{{0, "response", "finish", `"completed"`, `"failed"`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			a := filepath.Join(libraryDir, tt.file)
			b := filepath.Join(dir, "b.yaml")
			if tt.inject != "" {
				if _, stderr, code := runBinary(t, "cassette", "inject", a, b, "--op", tt.inject); code != 0 {
					t.Fatalf("inject: exit %d: %s", code, stderr)
				}
			} else {
				data, err := os.ReadFile(a)
				if err != nil {
					t.Fatal(err)
				}
				f, err := cassette.Parse(data)
				if err != nil {
					t.Fatal(err)
				}
				tt.edit(t, f)
				out, err := f.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(b, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, code := runBinary(t, "cassette", "diff", a, b)
			if code != 1 || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 1 (they differ)\n%s", code, stderr, stdout)
			}
			for _, h := range tt.human {
				if !strings.Contains(stdout, h) {
					t.Errorf("the report does not say %q:\n%s", h, stdout)
				}
			}
			js, stderr, code := runBinary(t, "cassette", "diff", a, b, "--json")
			var r edit.DiffReport
			if err := json.Unmarshal([]byte(js), &r); err != nil || code != 1 || r.Same {
				t.Fatalf("--json: exit %d, %v, stderr %q:\n%s", code, err, stderr, js)
			}
			for _, w := range tt.wants {
				if !hasChange(r, w.index, w.section, w.what, w.a, w.b) {
					t.Errorf("--json has no %s change %q %q → %q at interaction %d:\n%s\nhuman:\n%s", w.section, w.what, w.a, w.b, w.index, js, stdout)
				}
			}
		})
	}
}

func hasChange(r edit.DiffReport, index int, section, what, a, b string) bool {
	val := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	for _, d := range r.Interactions {
		if d.Index != index {
			continue
		}
		cs := map[string][]edit.Change{"request": d.Request, "response": d.Response, "timing": d.Timing}[section]
		for _, c := range cs {
			if c.What == what && val(c.A) == a && val(c.B) == b {
				return true
			}
		}
	}
	return false
}

// TestCassetteDiffUsage: a wrong command line is a usage error (exit 2,
// nothing on stdout); a missing or malformed recording is a failure
// (exit 1, the reason on stderr, nothing on stdout), as for every command.
func TestCassetteDiffUsage(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(libraryDir, "openai_plain.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("{{ not: [yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"cassette", "diff"},
		{"cassette", "diff", plain},
		{"cassette", "diff", plain, plain, plain},
		{"cassette", "diff", "--nope", plain, plain},
	} {
		if stdout, stderr, code := runBinary(t, args...); code != 2 || stdout != "" || !strings.Contains(stderr, "usage") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and the usage", args, code, stdout, stderr)
		}
	}
	for _, args := range [][]string{
		{"cassette", "diff", plain, filepath.Join(dir, "missing.yaml")},
		{"cassette", "diff", bad, plain},
	} {
		if stdout, stderr, code := runBinary(t, args...); code != 1 || stdout != "" || stderr == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 with the reason on stderr", args, code, stdout, stderr)
		}
	}
}

// TestCassetteToScript: `cassette to-script` through the binary writes a
// scenario (on stdout, or to OUT under the output rule) that the real
// `openmax fake-provider --scenario` serves as `openmax fake-provider
// --cassette` serves the recording: for each recorded request, the same
// status, the same scripted headers and the same body, byte for byte, on
// every wire (these cassettes were recorded from openmax's own fake
// provider, so its ids and timestamps are the recorded ones; the property
// over the whole library, real recordings included, is
// TestToScriptServesTheSameStream in recorder/edit).
func TestCassetteToScript(t *testing.T) {
	bin := buildBinary(t)
	for _, name := range []string{"openai_tool_round_trip.yaml", "anthropic_thinking.yaml", "responses_reasoning.yaml",
		"bedrock_plain.yaml", "429_retry_after_seconds.yaml", "overload_after_text.yaml", "reset_before_text.yaml"} {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(libraryDir, name)
			out := filepath.Join(t.TempDir(), "scenario.yaml")
			stdout, stderr, code := runBinary(t, "cassette", "to-script", in)
			if code != 0 || !strings.HasPrefix(stdout, "# openmax cassette to-script "+name) {
				t.Fatalf("to-script: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
			}
			if _, stderr, code := runBinary(t, "cassette", "to-script", in, out); code != 0 {
				t.Fatalf("to-script to OUT: exit %d, stderr %q", code, stderr)
			}
			if data, _ := os.ReadFile(out); string(data) != stdout {
				t.Fatalf("OUT holds something else than stdout:\n%s", data)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rec := startServer(t, ctx, bin, "fake-provider", "--cassette", in, "--pace", "instant")
			scr := startServer(t, ctx, bin, "fake-provider", "--scenario", out)
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			f, err := cassette.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range f.Interactions {
				want := sendRecordedRequest(t, ctx, rec.URL, it)
				got := sendRecordedRequest(t, ctx, scr.URL, it)
				if got.status != want.status || got.body != want.body || got.end != want.end {
					t.Errorf("interaction %d: the script served %d %q (%s), the recording %d %q (%s)\nrecording server: %s", i, got.status, got.body, got.end, want.status, want.body, want.end, rec.stderr)
				}
				for _, k := range []string{"Content-Type", "Retry-After"} {
					if g, w := got.header.Get(k), want.header.Get(k); g != w {
						t.Errorf("interaction %d: header %s: the script served %q, the recording %q", i, k, g, w)
					}
				}
			}
		})
	}
	// The output rule: never the input, an existing file only with --overwrite.
	in := filepath.Join(libraryDir, "openai_plain.yaml")
	existing := filepath.Join(t.TempDir(), "existing.yaml")
	if err := os.WriteFile(existing, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"cassette", "to-script", in, in, "--overwrite"},
		{"cassette", "to-script", in, existing},
		{"cassette", "to-script"},
		{"cassette", "to-script", in, existing, "extra"},
	} {
		if stdout, stderr, code := runBinary(t, args...); code != 2 || stdout != "" || !strings.Contains(stderr, "usage") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and the usage", args, code, stdout, stderr)
		}
	}
	if data, _ := os.ReadFile(existing); string(data) != "keep me\n" {
		t.Errorf("the existing output was changed: %q", data)
	}
	if _, stderr, code := runBinary(t, "cassette", "to-script", in, existing, "--overwrite"); code != 0 {
		t.Errorf("--overwrite: exit %d, %s", code, stderr)
	}
	if data, _ := os.ReadFile(existing); !strings.Contains(string(data), "Hello from the fake OpenAI.") {
		t.Errorf("--overwrite did not write the script: %q", data)
	}
}

// answer is what a client received for one request.
type answer struct {
	status int
	header http.Header
	body   string
	end    string // clean, reset, or the read error
}

// sendRecordedRequest sends it's recorded request to base and reads the
// whole answer.
func sendRecordedRequest(t *testing.T, ctx context.Context, base string, it *cassette.Interaction) answer {
	t.Helper()
	u, err := url.Parse(it.Request.URL)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, it.Request.Method, base+u.RequestURI(), strings.NewReader(it.Request.Body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range it.Request.Headers {
		if l := strings.ToLower(k); l != "content-length" && l != "accept-encoding" && l != "host" {
			req.Header[k] = vs
		}
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		return answer{end: "no response"}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(body), end: "clean"}
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		a.end = "reset"
	case err != nil:
		a.end = err.Error()
	}
	return a
}
