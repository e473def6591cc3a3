package harness

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/wire"
)

// Prompt runs one turn for text, as `openmax -p`: the reply text goes to w
// as it streams (each message ending a line), errors, retries and tool
// calls to the diagnostics log, and it returns the turn's stop_reason.
// Nobody can answer an approval here, so mutating tool calls are declined;
// an external tool's unapproved source is named on the log with the
// openmax --approve command that approves it.
// The session is not saved. It fails with ErrUntrusted (wrapped) in a
// project not trusted yet.
func (h *Harness) Prompt(ctx context.Context, text string, w io.Writer) (string, error) {
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("a prompt must not be empty")
	}
	if trusted, _ := h.settings(); !trusted {
		return "", untrusted{h.project}
	}
	defer h.closeCodex()
	sess := core.NewSession(h.sessionID())
	sess.SetApprovals(func() string { return "ask" }, nil)
	log := h.deps.Log
	endsLine := true
	stop := h.engine.RunTurn(ctx, sess, text, func(ev wire.Event) {
		switch ev := ev.(type) {
		case wire.Token:
			fmt.Fprint(w, ev.Text)
			endsLine = strings.HasSuffix(ev.Text, "\n")
		case wire.MessageDone:
			if !endsLine {
				fmt.Fprintln(w)
				endsLine = true
			}
		case wire.Error:
			fmt.Fprintf(log, "openmax: %s\n", ev.Message)
		case wire.Retry:
			fmt.Fprintf(log, "openmax: retrying (attempt %d of %d): %s\n", ev.Attempt, ev.MaxAttempts, ev.Reason)
		case wire.ToolStart:
			fmt.Fprintf(log, "openmax: tool %s %s\n", ev.Name, ev.Args)
		case wire.ApprovalRequest:
			// Nobody can approve here; a source no human approved is
			// surfaced with its openmax --approve command (in the
			// summary) rather than declined silently.
			if ev.Reason == "unapproved_source" {
				fmt.Fprintf(log, "openmax: declined, nobody can approve here: %s\n", ev.Summary)
			}
		case wire.ToolEnd:
			if !ev.OK {
				fmt.Fprintf(log, "openmax: tool call %s failed: %.200s\n", ev.CallID, ev.Output)
			}
		default:
			logHookEvent(log, ev)
		}
	})
	if !endsLine {
		fmt.Fprintln(w)
	}
	closeHooks(h.engine, log)
	return stop, nil
}

// untrusted is ErrUntrusted for one project, saying how to trust it.
type untrusted struct{ project string }

func (u untrusted) Error() string {
	return fmt.Sprintf("the project %s is not trusted; run `openmax trust %s` first", u.project, u.project)
}

func (untrusted) Is(target error) bool { return target == ErrUntrusted }
