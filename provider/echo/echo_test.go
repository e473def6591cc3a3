package echo

import (
	"context"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
)

func TestEchoesLastUserMessageWordByWord(t *testing.T) {
	req := provider.Request{Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "first"},
		{Role: provider.RoleAssistant, Text: "ignored"},
		{Role: provider.RoleUser, Text: "hello  there world "},
	}}
	var text []string
	var finish string
	for p := range (Provider{}).Stream(context.Background(), req) {
		switch p := p.(type) {
		case provider.TextDelta:
			text = append(text, p.Text)
		case provider.Finish:
			finish = p.Reason
		default:
			t.Errorf("unexpected part %T", p)
		}
	}
	if got := strings.Join(text, ""); got != "hello  there world " || len(text) != 3 || finish != "stop" {
		t.Errorf("deltas %q, finish %q", text, finish)
	}
}

func TestCancelledStreamHasNoFinish(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for p := range (Provider{}).Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "a b"}}}) {
		t.Errorf("part %T after cancel", p)
	}
}
