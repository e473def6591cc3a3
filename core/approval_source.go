package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// SourceGated is a tool whose definition and code are agent-writable (an
// external tool, package core/tool/external). It is gated whatever its
// Mutating says, and in ask mode its first call after any change to its
// bytes asks a human with reason unapproved_source.
type SourceGated interface {
	// UnapprovedSource returns the first of the tool's files whose exact
	// bytes no human approved, project-relative, with the hex sha256 of
	// those bytes; path is "" when all are approved. An error means the
	// call must not run.
	UnapprovedSource() (path, sum string, err error)
	// ApproveSource remembers a human's approval of those bytes.
	ApproveSource(path, sum string) error
	// EnvGrant lists the environment variables the tool receives: the
	// credential grant shown with the request.
	EnvGrant() []string
	// SourceDetail describes what runs, for the request's detail.
	SourceDetail() string
	// RunApproved is Run, refusing the call when a file's bytes, read
	// again just before the program starts, are not approved: a file
	// swapped while its approval was pending does not run.
	RunApproved(ctx context.Context, args json.RawMessage) tool.Result
}

// pinned is the tool a call of tl runs: for an external tool whose files
// passed the gate by a human's approval (every mode but auto, and in auto
// one granted credentials), one that checks the approval again just before
// its program starts.
func (t *turn) pinned(tl tool.Tool) tool.Tool {
	sg, ok := tl.(SourceGated)
	if !ok {
		return tl
	}
	if modeOf, _ := t.s.approvals(); (modeOf == nil || modeOf() == "auto") && len(sg.EnvGrant()) == 0 {
		return tl
	}
	return tool.Func{ToolSpec: tl.Spec(), Fn: sg.RunApproved}
}

// autoGrant is the auto mode's gate of an external tool: it returns why the
// call must not run ("" to run it). auto asks nothing, so a tool granted
// no variable runs whoever wrote it; but a credential grant (the manifest's
// env) hands openmax's secrets to a program the model may have written
// itself, and only a human may do that. In auto such a tool runs only on
// bytes a human approved (`openmax --approve`, or an unapproved_source
// request answered in ask mode); otherwise the call is refused, saying
// which file and how to approve it, and no request is emitted.
func autoGrant(name string, sg SourceGated) string {
	env := sg.EnvGrant()
	if len(env) == 0 {
		return ""
	}
	path, sum, err := sg.UnapprovedSource()
	if err != nil {
		return err.Error()
	}
	if path == "" {
		return ""
	}
	return fmt.Sprintf("%s is granted %s by its manifest, and in auto mode a tool granted credentials runs only on bytes a human approved: %s (sha %s) is not approved; "+
		"a human approves it from a terminal with `openmax --approve %s` (or answers its approval request in ask mode)",
		name, strings.Join(env, ", "), path, shortSHA(sum), shellWord(path))
}

// shortSHA is the first 12 hex digits of sum, as the wire shows it.
func shortSHA(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// maxSourceRequests bounds the unapproved_source requests of one call (a
// tool has a manifest and a code file; a file rewritten while its request
// is pending asks again, but not forever).
const maxSourceRequests = 4

// sourceGate asks a human, one approval_request with reason
// unapproved_source per file, until every file of sg has approved bytes.
// It returns why the call must not run ("" to run it) and whether a
// human answered a request (which then also stands for the call's gate).
func (t *turn) sourceGate(ctx context.Context, c provider.ToolCall, sg SourceGated, approver Approver) (why string, asked bool) {
	for n := 1; ; n++ {
		path, sum, err := sg.UnapprovedSource()
		if err != nil {
			return err.Error(), asked
		}
		if path == "" {
			return "", asked
		}
		if n > maxSourceRequests {
			return fmt.Sprintf("%s kept changing while its approval was asked for", path), asked
		}
		id := "approve-" + c.ID
		if n > 1 {
			id = fmt.Sprintf("approve-%s#%d", c.ID, n)
		}
		short := shortSHA(sum)
		announce := func() {
			t.emit(wire.ApprovalRequest{
				ApprovalID: id, Name: c.Name, Reason: "unapproved_source",
				Summary:    fmt.Sprintf("%s is an external tool whose %s (sha %s) no human has approved; `openmax --approve %s` approves it from a terminal", c.Name, path, short, shellWord(path)),
				Detail:     sg.SourceDetail(),
				SourcePath: path, SourceSHA: short, Env: sg.EnvGrant(),
			})
		}
		outcome := OutcomeDeclined
		if approver != nil {
			outcome = approver.Ask(ctx, id, announce)
		} else {
			announce()
		}
		t.emit(wire.ApprovalSettled{ApprovalID: id, Outcome: outcome})
		asked = true
		switch outcome {
		case OutcomeApproved:
		case OutcomeTimedOut:
			return "nobody answered the approval request in time", asked
		default:
			return fmt.Sprintf("the call was %s", outcome), asked
		}
		// The approval is remembered before the next file is looked at; one
		// that cannot be saved would be asked for again at once, so the call
		// stops here, saying why.
		if err := sg.ApproveSource(path, sum); err != nil {
			return fmt.Sprintf("the approval of %s could not be saved: %v", path, err), asked
		}
	}
}

// shellWord is s as one word a POSIX shell reads back as s: as it is when
// it holds only safe characters, else single-quoted.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/-+=:,@", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
