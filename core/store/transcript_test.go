package store

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

func TestTranscriptSkipsToolTraffic(t *testing.T) {
	got, truncated := Transcript(allKinds())
	want := []wire.TranscriptMessage{
		{Role: "user", Content: allKinds()[0].Text},
		{Role: "assistant", Content: "let me look"},
		{Role: "assistant", Content: "done"},
	}
	if truncated || !reflect.DeepEqual(got, want) {
		t.Fatalf("Transcript = %#v, %v; want %#v, false", got, truncated, want)
	}
}

func TestTranscriptEmpty(t *testing.T) {
	got, truncated := Transcript(nil)
	if got == nil || len(got) != 0 || truncated {
		t.Fatalf("Transcript(nil) = %#v, %v", got, truncated)
	}
	b, _ := json.Marshal(wire.Transcript{SessionID: "s", Messages: got})
	if !strings.Contains(string(b), `"messages":[]`) {
		t.Errorf("empty transcript encodes as %s", b)
	}
}

func TestTranscriptMessageCap(t *testing.T) {
	exact := strings.Repeat("é", MaxTranscriptMessageRunes) // 2 bytes a rune
	over := exact + "🙂tail"
	got, truncated := Transcript([]provider.Message{{Role: provider.RoleUser, Text: exact}})
	if truncated || got[0].Content != exact {
		t.Fatalf("a message of exactly the cap was cut (truncated=%v, %d runes)", truncated, utf8.RuneCountInString(got[0].Content))
	}
	got, truncated = Transcript([]provider.Message{
		{Role: provider.RoleUser, Text: "short"},
		{Role: provider.RoleAssistant, Text: over},
	})
	if !truncated {
		t.Error("truncated = false after cutting a message")
	}
	if got[0].Content != "short" || got[1].Content != exact {
		t.Errorf("capped content is %d runes, want %d", utf8.RuneCountInString(got[1].Content), MaxTranscriptMessageRunes)
	}
	if !utf8.ValidString(got[1].Content) {
		t.Error("cut inside a rune")
	}
}

func TestTranscriptTotalCap(t *testing.T) {
	// 4096 runes of 4 bytes: 16 KiB a message, so 16 fit in 256 KiB.
	big := strings.Repeat("🙂", MaxTranscriptMessageRunes)
	var msgs []provider.Message
	for i := range 20 {
		role := provider.RoleUser
		if i%2 == 1 {
			role = provider.RoleAssistant
		}
		msgs = append(msgs, provider.Message{Role: role, Text: string(rune('A'+i)) + big[4:]})
		msgs = append(msgs, provider.Message{Role: provider.RoleTool, Text: big + big}) // never counted
	}
	got, truncated := Transcript(msgs)
	if !truncated {
		t.Error("truncated = false after dropping messages")
	}
	total := 0
	for _, m := range got {
		total += len(m.Content)
	}
	if total > MaxTranscriptBytes {
		t.Errorf("content totals %d bytes, cap %d", total, MaxTranscriptBytes)
	}
	if len(got) != 16 {
		t.Fatalf("kept %d messages, want the 16 that fit", len(got))
	}
	// The most recent history is what is kept, in order.
	for i, m := range got {
		if want := string(rune('A' + 4 + i)); !strings.HasPrefix(m.Content, want) {
			t.Errorf("message %d starts %q, want %q", i, m.Content[:1], want)
		}
	}

	// Exactly at the cap nothing is cut.
	got, truncated = Transcript(msgs[:32])
	if truncated || len(got) != 16 {
		t.Errorf("16 messages of 16 KiB: kept %d, truncated %v", len(got), truncated)
	}
}
