package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// sourceTool is a fake external tool: its files are unapproved until
// approved, and it says which way it was run.
type sourceTool struct {
	unapproved []string // paths not yet approved, in order
	changing   bool     // every look at the first file finds new bytes
	looks      int
	saveErr    error
	approved   []string
	noGrant    bool // its manifest grants no variable
}

func (s *sourceTool) Spec() provider.ToolSpec {
	return provider.ToolSpec{Name: "ext", Schema: json.RawMessage(`{"type":"object"}`)}
}
func (s *sourceTool) Run(context.Context, json.RawMessage) tool.Result {
	return tool.Result{OK: true, Output: "ran unchecked"}
}
func (s *sourceTool) RunApproved(context.Context, json.RawMessage) tool.Result {
	return tool.Result{OK: true, Output: "ran checked"}
}
func (s *sourceTool) Mutating() bool { return false } // gated all the same
func (s *sourceTool) UnapprovedSource() (string, string, error) {
	if len(s.unapproved) == 0 {
		return "", "", nil
	}
	s.looks++
	return s.unapproved[0], fmt.Sprintf("%064x", s.looks), nil
}
func (s *sourceTool) ApproveSource(path, sum string) error {
	if s.saveErr != nil {
		return s.saveErr
	}
	s.approved = append(s.approved, path+" "+sum[:12])
	if !s.changing {
		s.unapproved = s.unapproved[1:]
	}
	return nil
}
func (s *sourceTool) EnvGrant() []string {
	if s.noGrant {
		return nil
	}
	return []string{"TOKEN"}
}
func (s *sourceTool) SourceDetail() string { return "runs ext.sh" }

// answer answers every approval request with one outcome.
type answer string

func (a answer) Ask(_ context.Context, _ string, announce func()) string {
	announce()
	return string(a)
}

func TestSourceGate(t *testing.T) {
	both := func() []string { return []string{".openmax/tools/ext.json", "ext.sh"} }
	cases := []struct {
		name     string
		mode     string
		answer   string
		tool     *sourceTool
		deny     core.Denier
		requests []string // reason source_path source_sha per request
		output   string
		approved int
	}{
		{"auto asks nothing and runs a tool granted nothing", "auto", "", &sourceTool{unapproved: both(), noGrant: true}, nil, nil, "ran unchecked", 0},
		{"auto refuses a credential grant no human approved", "auto", "", &sourceTool{unapproved: both()}, nil, nil,
			"not run: ext is granted TOKEN by its manifest, and in auto mode a tool granted credentials runs only on bytes a human approved: .openmax/tools/ext.json (sha 000000000000) is not approved; " +
				"a human approves it from a terminal with `openmax --approve .openmax/tools/ext.json` (or answers its approval request in ask mode)", 0},
		{"auto runs a credential grant a human approved, checked", "auto", "", &sourceTool{}, nil, nil, "ran checked", 0},
		{"readonly refuses", "readonly", "", &sourceTool{unapproved: both()}, nil, nil, "not run: ext changes the project, and the approval mode is readonly", 0},
		{"ask: each file, then runs checked", "ask", "approved", &sourceTool{unapproved: both()}, nil,
			[]string{"unapproved_source .openmax/tools/ext.json 000000000000", "unapproved_source ext.sh 000000000000"}, "ran checked", 2},
		{"ask: declined", "ask", "declined", &sourceTool{unapproved: both()}, nil,
			[]string{"unapproved_source .openmax/tools/ext.json 000000000000"}, "not run: the call was declined", 0},
		{"ask: timed out", "ask", "timed_out", &sourceTool{unapproved: both()}, nil,
			[]string{"unapproved_source .openmax/tools/ext.json 000000000000"}, "not run: nobody answered the approval request in time", 0},
		{"ask: approved bytes get the gate", "ask", "approved", &sourceTool{}, nil, []string{"gate  "}, "ran checked", 0},
		{"ask: an approval that cannot be saved", "ask", "approved", &sourceTool{unapproved: both(), saveErr: errors.New("disk full")}, nil,
			[]string{"unapproved_source .openmax/tools/ext.json 000000000000"}, "not run: the approval of .openmax/tools/ext.json could not be saved: disk full", 0},
		{"ask: bytes that keep changing", "ask", "approved", &sourceTool{unapproved: both(), changing: true}, nil,
			[]string{"unapproved_source .openmax/tools/ext.json 000000000000", "unapproved_source .openmax/tools/ext.json 000000000000",
				"unapproved_source .openmax/tools/ext.json 000000000000", "unapproved_source .openmax/tools/ext.json 000000000000"},
			"not run: .openmax/tools/ext.json kept changing while its approval was asked for", 4},
		{"deny before asking", "ask", "approved", &sourceTool{unapproved: both()}, denyAll{}, nil, "not run: denied: ext", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(t, mustScript(t, `
replies:
  - tool_calls: [{id: c1, name: ext, args: {}}]
  - text: ok
`), c.tool)
			e.Deny = c.deny
			sess := core.NewSession("s")
			sess.SetApprovals(func() string { return c.mode }, answer(c.answer))
			var rec recorder
			e.RunTurn(context.Background(), sess, "go", rec.emit)
			var requests []string
			var end wire.ToolEnd
			for _, ev := range rec.events {
				switch ev := ev.(type) {
				case wire.ApprovalRequest:
					requests = append(requests, ev.Reason+" "+ev.SourcePath+" "+strings.Repeat("0", len(ev.SourceSHA)))
					wantEnv := c.tool.EnvGrant()
					if ev.Reason == "gate" {
						wantEnv = nil
					}
					if fmt.Sprint(ev.Env) != fmt.Sprint(wantEnv) {
						t.Errorf("request %s carries env %v, want %v", ev.ApprovalID, ev.Env, wantEnv)
					}
				case wire.ToolEnd:
					end = ev
				}
			}
			if strings.Join(requests, "\n") != strings.Join(c.requests, "\n") {
				t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(requests, "\n"), strings.Join(c.requests, "\n"))
			}
			if end.Output != c.output || len(c.tool.approved) != c.approved {
				t.Errorf("tool_end %q with %d approvals saved; want %q, %d", end.Output, len(c.tool.approved), c.output, c.approved)
			}
		})
	}
}

type denyAll struct{}

func (denyAll) Deny(name string, _ json.RawMessage) string { return "denied: " + name }
