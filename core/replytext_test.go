package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// fakeRecord is a RecordStream kept in memory: what was written, and how
// it ended.
type fakeRecord struct {
	quoted    []byte
	writes    int
	committed *provider.Message
	aborted   bool
}

func (r *fakeRecord) Write(q []byte) error { r.quoted = append(r.quoted, q...); r.writes++; return nil }
func (r *fakeRecord) Commit(q []byte, m provider.Message) error {
	r.quoted = append(r.quoted, q...)
	r.committed = &m
	return nil
}
func (r *fakeRecord) Abort() error { r.aborted = true; return nil }

// TestLongReplyStreamsToTheRecord: a reply over 64 KiB goes to the
// session's record while it streams and is committed (or, when the
// provider fails, aborted) before the events that report it; a short one,
// or one whose record cannot begin, is appended whole; message_done's line
// is the line of its text either way.
func TestLongReplyStreamsToTheRecord(t *testing.T) {
	chunk := `a "quoted" <chunk> ünï€ ` + "\u2028\n"
	long := strings.Repeat(chunk, 4000) // about 130 KB
	tests := []struct {
		name      string
		text      string
		end       provider.Part // nil: the stream ends with no completion signal
		beginErr  error
		stop      string
		wantWrite bool // some of the text went to the record before the end
		record    string
		whole     bool // the reply was appended whole through persist
		kept      bool // the session keeps the reply
	}{
		{name: "finished", text: long, end: provider.Finish{Reason: "stop"}, stop: "stop", wantWrite: true, record: "committed", kept: true},
		{name: "truncated", text: long, stop: wire.StopTruncated, wantWrite: true, record: "committed", kept: true},
		{name: "provider fails", text: long, end: provider.Error{Err: errors.New("boom")}, stop: wire.StopError, wantWrite: true, record: "aborted"},
		{name: "short", text: chunk, end: provider.Finish{Reason: "stop"}, stop: "stop", record: "none", whole: true, kept: true},
		{name: "record cannot begin", text: long, end: provider.Finish{Reason: "stop"}, beginErr: errors.New("no disk"), stop: "stop", record: "none", whole: true, kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := provider.Func(func(context.Context, provider.Request) iter.Seq[provider.Part] {
				return func(yield func(provider.Part) bool) {
					for i := 0; i < len(tt.text); i += len(chunk) {
						if !yield(provider.TextDelta{Text: tt.text[i:min(i+len(chunk), len(tt.text))]}) {
							return
						}
					}
					if tt.end != nil {
						yield(tt.end)
					}
				}
			})
			var persisted []provider.Message
			s := core.NewSessionFrom("s", nil, func(m provider.Message) error { persisted = append(persisted, m); return nil })
			rec := &fakeRecord{}
			began := false
			s.StreamRecords(func(role provider.Role) (core.RecordStream, error) {
				if role != provider.RoleAssistant || began {
					t.Errorf("record begun for %s, began before: %v", role, began)
				}
				began = true
				if tt.beginErr != nil {
					return nil, tt.beginErr
				}
				return rec, nil
			})
			var events recorder
			var writesAtDone int
			emit := func(e wire.Event) {
				if _, ok := e.(wire.MessageDone); ok {
					writesAtDone = rec.writes
					if rec.committed == nil && !tt.whole {
						t.Error("message_done went out before its record was committed")
					}
				}
				events.emit(e)
			}
			if stop := newEngine(t, p).RunTurn(context.Background(), s, "go", emit); stop != tt.stop {
				t.Fatalf("stop %q, want %q", stop, tt.stop)
			}
			state := "none"
			switch {
			case rec.committed != nil && !rec.aborted:
				state = "committed"
			case rec.aborted && rec.committed == nil:
				state = "aborted"
			case rec.aborted:
				state = "committed and aborted"
			}
			if state != tt.record {
				t.Fatalf("record %s, want %s", state, tt.record)
			}
			if tt.wantWrite && rec.writes == 0 {
				t.Error("nothing was written to the record while the reply streamed")
			}
			if tt.record == "committed" {
				var text string
				if err := json.Unmarshal(append(append([]byte{'"'}, rec.quoted...), '"'), &text); err != nil || text != tt.text {
					t.Fatalf("the record's text (%v) is %d bytes, want %d", err, len(text), len(tt.text))
				}
				if rec.committed.Text != tt.text || writesAtDone != rec.writes {
					t.Errorf("committed %d bytes; writes at message_done %d, at the end %d", len(rec.committed.Text), writesAtDone, rec.writes)
				}
			}
			if whole := len(persisted) == 2; whole != tt.whole || (whole && persisted[1].Text != tt.text) {
				t.Errorf("persisted %d messages, want the reply appended whole: %v", len(persisted), tt.whole)
			}
			msgs := s.Messages()
			if kept := len(msgs) == 2 && msgs[1].Text == tt.text; kept != tt.kept {
				t.Errorf("the session keeps the reply: %v, want %v", kept, tt.kept)
			}
			for _, e := range events.events {
				if d, ok := e.(wire.MessageDone); ok {
					got, _ := wire.AppendEvent(nil, "s", d)
					want, _ := wire.AppendEvent(nil, "s", wire.MessageDone{Text: tt.text})
					if !bytes.Equal(got, want) {
						t.Errorf("message_done line of %d bytes differs from the line of its text (%d bytes)", len(got), len(want))
					}
				}
			}
		})
	}
}
