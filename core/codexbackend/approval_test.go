package codexbackend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/codexbackend"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider/codex"
)

// askingServer is an app-server whose turn runs one tool item: it sends
// item/started for item, then (unless request is "") the server request
// request about it, waits for the answer, and completes the item as
// codex does (declined unless accepted) and the turn. It keeps the
// turn/start params and the answer.
type askingServer struct {
	item    string // the item/started params' item
	request string // the approval method, "" for none

	mu        sync.Mutex
	turnStart json.RawMessage
	answer    json.RawMessage
}

func (f *askingServer) start(ctx context.Context, o codex.Options) (*codex.Client, error) {
	return pipeServer(ctx, o, nil, func(m clientLine, writeLine func(string)) {
		write := func(format string, args ...any) { writeLine(fmt.Sprintf(format, args...)) }
		switch m.Method {
		case codex.MethodInitialize:
			write(`{"id":%s,"result":{"userAgent":"x","codexHome":"/","platformFamily":"unix","platformOs":"linux"}}`, m.ID)
		case codex.MethodThreadStart:
			write(`{"id":%s,"result":{"thread":{"id":"th1"}}}`, m.ID)
		case codex.MethodTurnStart:
			f.mu.Lock()
			f.turnStart = m.Params
			f.mu.Unlock()
			write(`{"id":%s,"result":{"turn":{"id":"u1","status":"inProgress","items":[]}}}`, m.ID)
			write(`{"method":"turn/started","params":{"threadId":"th1","turn":{"id":"u1","status":"inProgress","items":[]}}}`)
			write(`{"method":"item/started","params":{"threadId":"th1","turnId":"u1","item":%s}}`, f.item)
			status := "completed"
			if f.request != "" {
				write(`{"id":100,"method":%q,"params":{"threadId":"th1","turnId":"u1","itemId":"i1","reason":"needs more"}}`, f.request)
			} else {
				f.finish(write, status)
			}
		case "":
			// The answer to the request.
			f.mu.Lock()
			f.answer = m.Result
			f.mu.Unlock()
			status := "declined"
			if strings.Contains(string(m.Result), `"accept"`) {
				status = "completed"
			}
			f.finish(write, status)
		default:
			write(`{"id":%s,"result":{}}`, m.ID)
		}
	})
}

func (f *askingServer) finish(write func(string, ...any), status string) {
	item := strings.Replace(f.item, `"status":"inProgress"`, `"status":"`+status+`"`, 1)
	write(`{"method":"item/completed","params":{"threadId":"th1","turnId":"u1","item":%s}}`, item)
	write(`{"method":"turn/completed","params":{"threadId":"th1","turn":{"id":"u1","status":"completed","items":[]}}}`)
}

// approving approves every request, announcing it first.
type approving struct{}

func (approving) Ask(_ context.Context, _ string, announce func()) string {
	announce()
	return core.OutcomeApproved
}

const (
	commandItem = `{"type":"commandExecution","id":"i1","command":"rm -rf build","cwd":"/p","status":"inProgress"}`
	changeItem  = `{"type":"fileChange","id":"i1","changes":[{"path":"/p/a.txt","kind":{"type":"add"},"diff":"a\n"}],"status":"inProgress"}`
	readItem    = `{"type":"commandExecution","id":"i1","command":"cat secrets","cwd":"/p","status":"inProgress","aggregatedOutput":"s3cret","exitCode":0}`
)

// TestCodexApprovals: each codex approval request is decided by openmax's
// gate (deny rules, then the mode) and answered to codex; the turn/start
// carries the mode's sandbox; what openmax cannot gate is said on the wire.
func TestCodexApprovals(t *testing.T) {
	deny, err := core.ParseDenyRules([]byte(`{"deny":[{"tool":"codex_command","args_match":"rm -rf","reason":"no deleting"},{"tool":"codex_command","args_match":"cat secrets"}]}`), "policy.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, mode, item, request string
		approver                  core.Approver
		noDeny                    bool
		answer, sandbox           string
		want                      []string // substrings of the events, in order
	}{
		{name: "auto accepts", mode: "auto", item: changeItem, request: codex.MethodItemFileChangeRequestApproval,
			answer: `{"decision":"accept"}`, sandbox: "dangerFullAccess",
			want: []string{`ToolStart{CallID:i1 Name:codex_file_change`, `Diff{`, `ToolEnd{CallID:i1 OK:true`}},
		{name: "readonly declines", mode: "readonly", item: changeItem, request: codex.MethodItemFileChangeRequestApproval,
			answer: `{"decision":"decline"}`, sandbox: "readOnly",
			want: []string{`ToolStart{CallID:i1`, `ToolEnd{CallID:i1 OK:false Output:not run: codex_file_change changes the project, and the approval mode is readonly}`, `HarnessNote{CallID:i1 Text:not run: codex_file_change changes`}},
		{name: "unknown mode declines", mode: "yolo", item: commandItem, request: codex.MethodItemCommandExecutionRequestApproval, noDeny: true,
			answer: `{"decision":"decline"}`, sandbox: "readOnly",
			want: []string{`ToolEnd{CallID:i1 OK:false Output:not run: codex_command changes the project, and the approval mode "yolo" is not one openmax knows`}},
		{name: "ask approved", mode: "ask", item: commandItem, request: codex.MethodItemCommandExecutionRequestApproval, approver: approving{}, noDeny: true,
			answer: `{"decision":"accept"}`, sandbox: "dangerFullAccess",
			want: []string{`ApprovalRequest{ApprovalID:approve-i1 Name:codex_command`, `ApprovalSettled{ApprovalID:approve-i1 Outcome:approved}`, `ToolEnd{CallID:i1 OK:true`}},
		{name: "ask unanswered declines", mode: "ask", item: commandItem, request: codex.MethodItemCommandExecutionRequestApproval, noDeny: true,
			answer: `{"decision":"decline"}`, sandbox: "dangerFullAccess",
			want: []string{`ApprovalRequest{ApprovalID:approve-i1`, `Outcome:declined`, `ToolEnd{CallID:i1 OK:false Output:not run: the call was declined}`}},
		{name: "deny rule in auto", mode: "auto", item: commandItem, request: codex.MethodItemCommandExecutionRequestApproval, approver: approving{},
			answer: `{"decision":"decline"}`, sandbox: "dangerFullAccess",
			want: []string{`ToolEnd{CallID:i1 OK:false Output:not run: denied by policy.json rule 1 (tool codex_command, args matching "rm -rf"): no deleting}`, `HarnessNote{CallID:i1 Text:not run: denied`}},
		{name: "deny rule on a command codex ran unasked", mode: "auto", item: readItem,
			sandbox: "dangerFullAccess",
			want:    []string{`ToolEnd{CallID:i1 OK:true Output:s3cret}`, `HarnessNote{CallID:i1 Text:[openmax] codex ran codex_command without asking openmax, so it could not be refused although a deny rule matches it: denied by policy.json rule 2`}},
		{name: "permissions granted none", mode: "ask", item: commandItem, request: codex.MethodItemPermissionsRequestApproval, noDeny: true,
			answer: `{"permissions":{}}`, sandbox: "dangerFullAccess",
			want: []string{`HarnessNote{CallID:i1 Text:[openmax] codex asked for permissions beyond its sandbox (needs more); openmax grants none`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &askingServer{item: tc.item, request: tc.request}
			b := codexbackend.New(codexbackend.Config{Start: f.start, Dir: "/p"})
			defer b.Close(context.Background())
			tools, err := tool.NewRegistry()
			if err != nil {
				t.Fatal(err)
			}
			eng := &core.Engine{Backend: b, Tools: tools}
			if !tc.noDeny {
				eng.Deny = deny
			}
			s := core.NewSession("s1")
			mode := tc.mode
			s.SetApprovals(func() string { return mode }, tc.approver)
			var events []string
			stop := eng.RunTurn(context.Background(), s, "go", func(ev wire.Event) { events = append(events, fmt.Sprintf("%T%+v", ev, ev)) })
			got := strings.Join(events, "\n")
			if stop != "completed" {
				t.Fatalf("stop %q:\n%s", stop, got)
			}
			f.mu.Lock()
			answer, turnStart := string(f.answer), string(f.turnStart)
			f.mu.Unlock()
			if answer != tc.answer {
				t.Errorf("codex was answered %s, want %s", answer, tc.answer)
			}
			if want := `"approvalPolicy":"untrusted"`; !strings.Contains(turnStart, want) || !strings.Contains(turnStart, `"sandboxPolicy":{"type":"`+tc.sandbox+`"}`) {
				t.Errorf("turn/start %s, want %s and the %s sandbox", turnStart, want, tc.sandbox)
			}
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("no %q (in order) in the events:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}
