package appserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider/codex"
)

// step is one exchange of a generated session.
type step struct {
	kind   int // see the switch in render
	method string
	text   string
	file   string
	notes  int   // notifications after a response
	stamp  int64 // an emittedAtMs
}

// view is who a session is rendered for: the recording or a later client.
type view struct {
	cwd string
	id  func(n int) any // the id of the client's n-th request
}

// enc renders a message as codex does: compact, no HTML escaping.
func enc(t *rapid.T, v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// writeLine writes a transcript line as codex.TranscriptBytes records
// it, but keeping "<>&" as they crossed (TranscriptBytes's json.Marshal
// escapes them).
func writeLine(t *rapid.T, w *strings.Builder, dir, line string) {
	msg := line
	if !json.Valid([]byte(msg)) {
		msg = enc(t, msg)
	}
	fmt.Fprintf(w, `{"dir":%q,"msg":%s}`+"\n", dir, msg)
}

// render lays a session out as (dir, line) pairs for one view.
func render(t *rapid.T, steps []step, v view) (dirs, lines []string) {
	add := func(dir string, msg any) {
		dirs = append(dirs, dir)
		if s, ok := msg.(string); ok {
			lines = append(lines, s)
			return
		}
		lines = append(lines, enc(t, msg))
	}
	type obj = map[string]any
	add(codex.DirSend, obj{"id": v.id(0), "method": "thread/start", "params": obj{"cwd": v.cwd, "model": "m"}})
	add(codex.DirRecv, obj{"id": v.id(0), "result": obj{"thread": obj{"id": "thr", "cwd": v.cwd}}})
	req, serverReq := 1, 0
	for _, s := range steps {
		path := v.cwd + "/" + s.file
		switch s.kind {
		case 0: // a client request, its response, notifications
			id := v.id(req)
			req++
			add(codex.DirSend, obj{"id": id, "method": s.method, "params": obj{"text": s.text, "path": path}})
			add(codex.DirRecv, obj{"id": id, "result": obj{"echo": s.text, "path": path}})
			for i := range s.notes {
				add(codex.DirRecv, obj{"method": "item/agentMessage/delta", "params": obj{"delta": fmt.Sprint(s.text, i)}, "emittedAtMs": s.stamp + int64(i)})
			}
		case 1: // a client notification
			add(codex.DirSend, obj{"method": s.method, "params": obj{"text": s.text}})
		case 2: // a server notification
			add(codex.DirRecv, obj{"method": s.method, "params": obj{"text": s.text, "cwd": path}, "emittedAtMs": s.stamp})
		case 3: // a server request and the client's answer
			add(codex.DirRecv, obj{"id": serverReq, "method": "item/tool/call", "params": obj{"tool": s.method, "arguments": obj{"path": path}}})
			add(codex.DirSend, obj{"id": serverReq, "result": obj{"success": true, "contentItems": []any{obj{"type": "inputText", "text": s.text}}}})
			serverReq++
		case 4: // a line that is not JSON
			add(codex.DirRecv, "log: "+s.text)
		}
	}
	return dirs, lines
}

// TestReplayProperty: any session of well-formed requests, notifications,
// server requests and non-JSON lines replays exactly to a client that
// sends the recorded lines with its own request ids and cwd: it gets
// every recorded app-server line, with its own ids and cwd in them.
func TestReplayProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		word := rapid.StringMatching(`[a-z <>&"\\é]{0,8}`)
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) step {
			return step{
				kind:   rapid.IntRange(0, 4).Draw(t, "kind"),
				method: rapid.SampledFrom([]string{"turn/start", "thread/read", "turn/steer", "x/y"}).Draw(t, "method"),
				text:   word.Draw(t, "text"),
				file:   rapid.StringMatching(`[a-z]{1,5}(/[a-z]{1,5})?`).Draw(t, "file"),
				notes:  rapid.IntRange(0, 3).Draw(t, "notes"),
				stamp:  rapid.Int64Range(0, 1<<50).Draw(t, "stamp"),
			}
		}), 0, 15).Draw(t, "steps")
		recorded := view{cwd: "/tmp/rec/" + rapid.StringMatching(`[a-z]{1,6}`).Draw(t, "recCwd"), id: func(n int) any { return n + 1 }}
		base := rapid.IntRange(-5, 1000).Draw(t, "idBase")
		stringIDs := rapid.Bool().Draw(t, "stringIDs")
		live := view{cwd: "/tmp/" + rapid.StringMatching(`[A-Za-z0-9é]{1,8}(/[a-z]{1,3})?`).Draw(t, "cwd"), id: func(n int) any {
			if stringIDs {
				return fmt.Sprintf("c-%d", base+n)
			}
			return base + n
		}}

		dirs, recLines := render(t, steps, recorded)
		_, liveLines := render(t, steps, live)
		var file strings.Builder
		var client, want []string
		for i, dir := range dirs {
			writeLine(t, &file, dir, recLines[i])
			if dir == codex.DirSend {
				client = append(client, liveLines[i])
			} else {
				want = append(want, liveLines[i])
			}
		}
		tr, err := Parse(strings.NewReader(file.String()), 0)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		in := strings.NewReader(strings.Join(client, "\n") + "\n")
		if err := Serve(context.Background(), tr, in, &out, Options{}); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if got := strings.TrimSuffix(out.String(), "\n"); got != strings.Join(want, "\n") {
			t.Fatalf("wrote\n%s\nwant\n%s", got, strings.Join(want, "\n"))
		}
	})
}

// TestMissProperty: a session where the client changes one of its lines
// misses at that line: Serve returns ErrMiss, the client got every
// recorded app-server line up to the group of client lines holding it,
// then (when the changed line is a request) one error answer with its id.
func TestMissProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) step {
			return step{
				kind:   rapid.IntRange(0, 4).Draw(t, "kind"),
				method: rapid.SampledFrom([]string{"turn/start", "thread/read"}).Draw(t, "method"),
				text:   rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "text"),
				file:   "f",
				notes:  rapid.IntRange(0, 2).Draw(t, "notes"),
			}
		}), 0, 10).Draw(t, "steps")
		v := view{cwd: "/tmp/rec", id: func(n int) any { return n + 1 }}
		dirs, lines := render(t, steps, v)
		var sendAt []int // the index in lines of each client line
		for i, d := range dirs {
			if d == codex.DirSend {
				sendAt = append(sendAt, i)
			}
		}
		changed := sendAt[rapid.IntRange(0, len(sendAt)-1).Draw(t, "changed")]
		var file strings.Builder
		var client []string
		for i, dir := range dirs {
			writeLine(t, &file, dir, lines[i])
			if dir != codex.DirSend {
				continue
			}
			line := lines[i]
			if i == changed {
				line = strings.Replace(strings.Replace(line, `"text":"`, `"text":"!`, 1), `"model":"m"`, `"model":"m2"`, 1)
			}
			client = append(client, line)
		}
		// The group holding the changed line starts at start; the
		// client got the app-server lines before it.
		start := changed
		for start > 0 && dirs[start-1] == codex.DirSend {
			start--
		}
		var want []string
		for i := range start {
			if dirs[i] == codex.DirRecv {
				want = append(want, lines[i])
			}
		}
		tr, err := Parse(strings.NewReader(file.String()), 0)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = Serve(context.Background(), tr, strings.NewReader(strings.Join(client, "\n")+"\n"), &out, Options{})
		if !errors.Is(err, ErrMiss) {
			t.Fatalf("Serve returned %v, want a miss", err)
		}
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if out.Len() == 0 {
			got = nil
		}
		isRequest := strings.HasPrefix(lines[changed], `{"id":`) && strings.Contains(lines[changed], `"method":`)
		if isRequest {
			if len(got) != len(want)+1 {
				t.Fatalf("wrote %d lines, want %d and an answer:\n%s", len(got), len(want), out.String())
			}
			var a struct {
				ID    json.RawMessage `json:"id"`
				Error struct{ Code int }
			}
			if err := json.Unmarshal([]byte(got[len(got)-1]), &a); err != nil || a.Error.Code != MissCode {
				t.Fatalf("the last line %s is not a miss answer", got[len(got)-1])
			}
			got = got[:len(got)-1]
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("wrote\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
