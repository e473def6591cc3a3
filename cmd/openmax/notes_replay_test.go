package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

// TestHarnessNotesRecordReplay: sessions whose transcripts carry harness
// notes of the policy and approval kinds (a refusal riding a tool result,
// with its call_id; a mode change before the next prompt, with an empty
// one) record through `openmax record` exactly as they run live, and their
// replay reproduces the recording byte for byte, the notes included.
// (approval_cancelled is left out: its recording replays with the approval
// declined instead of cancelled, before these notes existed too.)
func TestHarnessNotesRecordReplay(t *testing.T) {
	for _, tt := range []struct {
		name  string
		notes []string // fragments of the harness_note lines the case must carry
	}{
		{"approval_modes", []string{`"call_id":"","text":"[openmax] The approval mode of this project was changed from ask to readonly`, `"call_id":"c1","text":"not run: touch changes the project, and the approval mode is readonly"`}},
		{"approval_timed_out", []string{`"call_id":"c1","text":"not run: nobody answered the approval request in time"`}},
		{"deny_rule", []string{`"call_id":"c1","text":"not run: denied by $PROJECT/.openmax/policy.json rule 1`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.name+".yaml")
			casePath := sessionPath(tt.name)
			transcript, _ := runSession(t, casePath, []string{"record", "--cassette", path})
			if err := golden.Section(casePath, "transcript", "recording", transcript, false); err != nil {
				t.Fatalf("recording changed the live transcript: %v", err)
			}
			for _, n := range tt.notes {
				if !strings.Contains(string(transcript), `"type":"harness_note",`+n) {
					t.Errorf("the recording has no harness_note %s", n)
				}
			}
			f, err := cassette.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, err := replayFile(ctx, f, path, replay.Pace{Mode: replay.PaceInstant}, nil, io.Discard, env{})
			if err != nil {
				t.Fatal(err)
			}
			if p := f.Session.Config.Project; p != "/" {
				got = bytes.ReplaceAll(got, []byte(p), []byte("$PROJECT")) // as runSession writes it
			}
			if !bytes.Equal(got, transcript) {
				t.Errorf("the replay differs from the recording:\n--- replay\n%s--- recording\n%s", got, transcript)
			}
		})
	}
}
