package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/golden"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

// TestRecordKeepsApprovalGates: `openmax record` wraps every tool to keep
// its results, and a wrapped tool must still be what the approval policy
// gates. Recording the ask-mode approval sessions prints exactly their
// live transcripts (the approval_request included: before, the recorded
// tool was no longer mutating and ran ungated), the cassette marks the
// gated tool, and its replay reproduces the recording. An external tool's
// unapproved_source requests replay from what its source gate said while
// recording, without its files.
func TestRecordKeepsApprovalGates(t *testing.T) {
	for _, name := range []string{"approval_approved", "approval_declined", "external_tool_unapproved_source", "deny_rule", "approval_cancelled"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name+".yaml")
			casePath := sessionPath(name)
			transcript, _ := runSession(t, casePath, []string{"record", "--cassette", path})
			if err := golden.Section(casePath, "transcript", "recording", transcript, false); err != nil {
				t.Fatalf("recording changed the live transcript: %v", err)
			}
			f, err := cassette.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			gated := map[string]bool{}
			for _, tl := range f.Session.Tools {
				gated[tl.Name] = tl.Mutating
			}
			if name != "external_tool_unapproved_source" && (!gated["touch"] || gated["echo_args"]) {
				t.Errorf("gated tools in the cassette: %v; want touch gated and echo_args not", gated)
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
