package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/provider"
)

// failingModes is a ModeStore whose saves fail: the mode never changes.
type failingModes struct{ mode string }

func (m failingModes) Mode() string         { return m.mode }
func (m failingModes) SetMode(string) error { return errors.New("disk full") }

// TestModeChangeNote: an approval_mode that really changes the mode is a
// settings notice for the model: written into the transcript (persisted)
// just before the next prompt, sent with it, and reported by a
// harness_note with an empty call_id right after that turn's budget, its
// text exactly what was written. Setting the mode the project already has,
// or a save that fails, writes no note.
func TestModeChangeNote(t *testing.T) {
	for _, tt := range []struct {
		name  string
		store stdio.ModeStore
		modes []string
		notes []string
	}{
		{"one change", stdio.NewMemoryModes("ask"), []string{"readonly"}, []string{core.ModeNote("ask", "readonly")}},
		{"same mode", stdio.NewMemoryModes("ask"), []string{"ask"}, nil},
		{"change then the same again", stdio.NewMemoryModes("ask"), []string{"auto", "auto"}, []string{core.ModeNote("ask", "auto")}},
		{"two changes", stdio.NewMemoryModes("auto"), []string{"readonly", "ask"}, []string{core.ModeNote("auto", "readonly"), core.ModeNote("readonly", "ask")}},
		{"save fails", failingModes{"ask"}, []string{"auto"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var sent []provider.Message
			model := provider.Func(func(_ context.Context, req provider.Request) iter.Seq[provider.Part] {
				mu.Lock()
				sent = append([]provider.Message(nil), req.Messages...)
				mu.Unlock()
				return func(yield func(provider.Part) bool) {
					_ = yield(provider.TextDelta{Text: "ok"}) && yield(provider.Finish{Reason: "stop"})
				}
			})
			reg, err := tool.NewRegistry()
			if err != nil {
				t.Fatal(err)
			}
			var persisted []provider.Message
			sess := core.NewSessionFrom("s", nil, func(m provider.Message) error { persisted = append(persisted, m); return nil })
			var in strings.Builder
			for _, m := range tt.modes {
				in.WriteString(`{"cmd":"approval_mode","mode":"` + m + `"}` + "\n")
			}
			in.WriteString(`{"cmd":"user","text":"go"}` + "\n")
			var out bytes.Buffer
			if _, err := stdio.Serve(context.Background(), strings.NewReader(in.String()), &out, stdio.Options{
				Engine: &core.Engine{Provider: model, Tools: reg}, SessionID: "s", Session: sess, Modes: tt.store,
			}); err != nil {
				t.Fatal(err)
			}
			var types, notes []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var l struct {
					Type   string  `json:"type"`
					CallID *string `json:"call_id"`
					Text   string  `json:"text"`
				}
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				types = append(types, l.Type)
				if l.Type == "harness_note" {
					if l.CallID == nil || *l.CallID != "" {
						t.Errorf("note %s: want an empty call_id", line)
					}
					notes = append(notes, l.Text)
				}
			}
			var budget int
			for i, typ := range types {
				if typ == "budget" {
					budget = i
				}
			}
			for i := range notes {
				if types[budget+1+i] != "harness_note" {
					t.Errorf("the notes do not follow the budget: %v", types)
				}
			}
			if strings.Join(notes, "|") != strings.Join(tt.notes, "|") {
				t.Fatalf("notes %q; want %q\n%s", notes, tt.notes, out.String())
			}
			// Transcript and request: the notes, then the prompt.
			var wantMsgs []string
			wantMsgs = append(wantMsgs, tt.notes...)
			wantMsgs = append(wantMsgs, "go")
			var got, gotSent []string
			for _, m := range persisted[:len(wantMsgs)] {
				got = append(got, m.Text)
			}
			mu.Lock()
			for _, m := range sent {
				gotSent = append(gotSent, m.Text)
			}
			mu.Unlock()
			if strings.Join(got, "|") != strings.Join(wantMsgs, "|") {
				t.Errorf("persisted %q; want %q first", got, wantMsgs)
			}
			if strings.Join(gotSent, "|") != strings.Join(wantMsgs, "|") {
				t.Errorf("sent %q; want %q", gotSent, wantMsgs)
			}
		})
	}
}
