package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"syscall"
	"testing"

	"github.com/openmax/openmax/internal/jsonstr"
	"github.com/openmax/openmax/provider"
	"pgregory.net/rapid"
)

// streamText streams text to s in the given pieces (cut points into
// text), encoded as the engine encodes them, and commits m.
func streamText(s *Stream, text string, cuts []int, m provider.Message) error {
	var e jsonstr.Escaper
	prev := 0
	for _, c := range cuts {
		if err := s.Write(e.Append(nil, text[prev:c])); err != nil {
			return err
		}
		prev = c
	}
	return s.Commit(e.Flush(e.Append(nil, text[prev:])), m)
}

// lastLine is the last whole line of the file at path.
func lastLine(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	return data[bytes.LastIndexByte(data, '\n')+1:]
}

// TestStreamedRecordIsAppendsRecord: a message streamed in any pieces
// (cut inside characters too) is written as the very bytes Append writes
// for it, and loads back equal, after every other kind of record.
func TestStreamedRecordIsAppendsRecord(t *testing.T) {
	s := open(t)
	w, err := s.Create("s1")
	if err != nil {
		t.Fatal(err)
	}
	want := allKinds()
	appendAll(t, w, want...)
	rapid.Check(t, func(rt *rapid.T) {
		m := provider.Message{Role: provider.RoleAssistant, Text: rapid.StringN(1, 200, -1).Draw(rt, "text") + "\xe2\x82",
			Phase: rapid.SampledFrom([]string{"", "final_answer"}).Draw(rt, "phase")}
		if rapid.Bool().Draw(rt, "thinking") {
			m.Thinking = []provider.Thinking{{Text: "why <not>", Signature: "sig"}}
		}
		if rapid.Bool().Draw(rt, "calls") {
			m.ToolCalls = []provider.ToolCall{{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a&b"}`)}}
		}
		var cuts []int
		for c := 0; c < len(m.Text); {
			c = rapid.IntRange(c, len(m.Text)).Draw(rt, "cut")
			cuts = append(cuts, c)
			if c == len(m.Text) || len(cuts) > 8 {
				break
			}
		}
		st, err := w.Stream(provider.RoleAssistant)
		if err != nil {
			rt.Fatal(err)
		}
		if err := streamText(st, m.Text, cuts, m); err != nil {
			rt.Fatal(err)
		}
		rec, err := encodeRecord(m)
		if err != nil {
			rt.Fatal(err)
		}
		if got := lastLine(t, w.Path()); !bytes.Equal(append(got, '\n'), rec) {
			rt.Fatalf("streamed record\n%s\nAppend's\n%s", got, rec)
		}
		if err := json.Unmarshal(jsonstr.AppendQuoted(nil, m.Text, false), &m.Text); err != nil { // as a JSON string holds it
			rt.Fatal(err)
		}
		want = append(want, m)
	})
	mustClose(t, w)
	_, got := mustContinue(t, s, "s1")
	equalMsgs(t, got, want)
}

// TestStreamUntilCommitIsATornLine: while a record streams, a reader of the
// file sees every earlier record and a torn last line; a crash then (the
// file as the killed process left it) loses that record alone on Continue,
// which cuts it off; Abort and Close cut it off at once.
func TestStreamUntilCommitIsATornLine(t *testing.T) {
	for _, end := range []string{"crash", "abort", "close"} {
		t.Run(end, func(t *testing.T) {
			s := open(t)
			w, err := s.Create("s1")
			if err != nil {
				t.Fatal(err)
			}
			earlier := threeMsgs()
			appendAll(t, w, earlier...)
			before, _ := os.ReadFile(w.Path())
			st, err := w.Stream(provider.RoleAssistant)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if err := st.Write([]byte(fmt.Sprintf("piece %d \\n", i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Append(provider.Message{Role: provider.RoleUser, Text: "meanwhile"}); err == nil {
				t.Fatal("Append while a record streams succeeded")
			}
			msgs, torn := readRecords(t, w.Path())
			equalMsgs(t, msgs, earlier)
			if !torn {
				t.Fatal("the streaming record is not on the file as a torn last line")
			}
			mid, _ := os.ReadFile(w.Path())
			switch end {
			case "crash":
				mustClose(t, w)
				if err := os.WriteFile(w.Path(), mid, 0o600); err != nil { // as the killed writer left it
					t.Fatal(err)
				}
			case "abort":
				if err := st.Abort(); err != nil {
					t.Fatal(err)
				}
				if after, _ := os.ReadFile(w.Path()); !bytes.Equal(after, before) {
					t.Fatalf("after Abort the file is\n%s\nwant\n%s", after, before)
				}
				appendAll(t, w, provider.Message{Role: provider.RoleUser, Text: "next"})
				earlier = append(earlier, provider.Message{Role: provider.RoleUser, Text: "next"})
				mustClose(t, w)
			case "close":
				mustClose(t, w)
			}
			w2, got := mustContinue(t, s, "s1")
			equalMsgs(t, got, earlier)
			if after, _ := readRecords(t, w2.Path()); len(after) != len(earlier) {
				t.Fatalf("the file holds %d records after Continue, want %d", len(after), len(earlier))
			}
			if err := st.Write([]byte("late")); err == nil {
				t.Error("Write on an ended stream succeeded")
			}
			mustClose(t, w2)
		})
	}
}

// TestStreamWriteFailureCutsRecord: a streamed piece that does not fit
// (ENOSPC) ends the stream and cuts the record off; the Writer appends
// again once there is room, and nothing of the failed record remains.
func TestStreamWriteFailureCutsRecord(t *testing.T) {
	s := open(t)
	w, err := s.Create("s1")
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, threeMsgs()...)
	ff := &faultFile{File: w.f.(*os.File), room: -1}
	w.f = ff
	st, err := w.Stream(provider.RoleAssistant)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write([]byte("fits")); err != nil {
		t.Fatal(err)
	}
	ff.room = 3
	if err := st.Write([]byte("does not fit")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write on a full disk: %v", err)
	}
	if err := st.Commit(nil, provider.Message{Role: provider.RoleAssistant}); err == nil {
		t.Fatal("Commit after a failed Write succeeded")
	}
	ff.room = -1
	next := provider.Message{Role: provider.RoleAssistant, Text: "appended whole"}
	appendAll(t, w, next)
	mustClose(t, w)
	_, got := mustContinue(t, s, "s1")
	equalMsgs(t, got, append(threeMsgs(), next))
}

// TestLoadsOldRecordForm: files written when the checksum came first load
// as before, beside records of the current form.
func TestLoadsOldRecordForm(t *testing.T) {
	s := open(t)
	w, err := s.Create("s1")
	if err != nil {
		t.Fatal(err)
	}
	path := w.Path()
	mustClose(t, w)
	old := allKinds()[:2]
	var data []byte
	for _, m := range old {
		body, err := json.Marshal(toDisk(m))
		if err != nil {
			t.Fatal(err)
		}
		data = fmt.Appendf(data, `{"crc":"%08x","msg":%s}`+"\n", crc32.Checksum(body, castagnoli()), body)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	w, got := mustContinue(t, s, "s1")
	equalMsgs(t, got, old)
	appendAll(t, w, allKinds()[2])
	mustClose(t, w)
	_, got = mustContinue(t, s, "s1")
	equalMsgs(t, got, allKinds()[:3])
}
