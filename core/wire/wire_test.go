package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestAppendEventKeyOrder(t *testing.T) {
	cached := 3
	tests := []struct {
		ev   Event
		want string
	}{
		{Token{Text: "a<b>&"}, `{"session_id":"s","type":"token","text":"a<b>&"}`},
		{Usage{PromptTokens: 1, CompletionTokens: 2}, `{"session_id":"s","type":"usage","prompt_tokens":1,"completion_tokens":2,"cached_tokens":null}`},
		{Usage{PromptTokens: 1, CompletionTokens: 2, CachedTokens: &cached}, `{"session_id":"s","type":"usage","prompt_tokens":1,"completion_tokens":2,"cached_tokens":3}`},
		{ToolStart{CallID: "c", Name: "n"}, `{"session_id":"s","type":"tool_start","call_id":"c","name":"n","args":{}}`},
		{Refrozen{}, `{"session_id":"s","type":"refrozen","tools":[],"skills":[],"changes":[]}`},
		{ApprovalRequest{ApprovalID: "a", Reason: "gate"}, `{"session_id":"s","type":"approval_request","approval_id":"a","name":"","summary":"","detail":"","reason":"gate","source_path":"","source_sha":""}`},
		{ApprovalRequest{ApprovalID: "a", Reason: "gate", Env: []string{"K"}}, `{"session_id":"s","type":"approval_request","approval_id":"a","name":"","summary":"","detail":"","reason":"gate","source_path":"","source_sha":"","env":["K"]}`},
		{Done{StopReason: "stop"}, `{"session_id":"s","type":"done","stop_reason":"stop"}`},
	}
	for _, tt := range tests {
		got, err := AppendEvent(nil, "s", tt.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want+"\n" {
			t.Errorf("%T:\n got %s want %s", tt.ev, got, tt.want)
		}
		c := NewChecker(Strict())
		_ = c.Line([]byte(`{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"x","project":"/","continued":false}`))
		if err := c.shape(defByType[reflect.TypeOf(tt.ev)], decode(t, got)); err != nil {
			t.Errorf("%T: emitted line fails the shape check: %v", tt.ev, err)
		}
	}
}

func decode(t *testing.T, line []byte) object {
	t.Helper()
	o, err := parseObject(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestAppendLineKeyOrder(t *testing.T) {
	tests := []struct {
		l    Line
		want string
	}{
		{Hello{Proto: Proto, ProtocolVersion: ProtocolVersion, SessionID: "s", Version: "1", Project: "/p"},
			`{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"1","project":"/p","continued":false}`},
		{Transcript{SessionID: "s"}, `{"type":"transcript","session_id":"s","messages":[],"truncated":false}`},
		{ProtocolError{Message: "m"}, `{"type":"protocol_error","message":"m"}`},
		{ApprovalModeAck{Mode: "ask"}, `{"type":"approval_mode","mode":"ask"}`},
	}
	for _, tt := range tests {
		got, err := AppendLine(nil, tt.l)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want+"\n" {
			t.Errorf("%T:\n got %s want %s", tt.l, got, tt.want)
		}
	}
}

func TestHelloConstantsMatchTags(t *testing.T) {
	d, _ := LineDef("hello")
	for _, f := range d.Fields {
		switch f.Name {
		case "proto":
			if want, _ := json.Marshal(Proto); f.Const != string(want) {
				t.Errorf("proto const %s, want %s", f.Const, want)
			}
		case "protocol_version":
			if want, _ := json.Marshal(ProtocolVersion); f.Const != string(want) {
				t.Errorf("protocol_version const %s, want %s", f.Const, want)
			}
		}
	}
	if !strings.HasSuffix(Proto, "/6") || ProtocolVersion != 6 {
		t.Errorf("proto %q and protocol_version %d disagree", Proto, ProtocolVersion)
	}
}

func TestEveryDefinitionCounted(t *testing.T) {
	// 19 event rows in the contract's table plus protocol_error and the
	// approval_mode ack: 21 typed stdout lines besides hello and transcript.
	if got := len(Events) + len(Lines) - 2; got != 21 {
		t.Errorf("%d typed lines, want 21", got)
	}
	if len(Commands) != 6 {
		t.Errorf("%d commands, want 6", len(Commands))
	}
}

func TestDecodeCommand(t *testing.T) {
	tests := []struct {
		line    string
		want    Command
		errName string // CommandError.Name when an error is expected
		errHas  string
	}{
		{`{"cmd":"user","text":"hi"}`, User{Text: "hi"}, "", ""},
		{`{"cmd":"user","text":"hi","extra":[1,2],"more":{}}`, User{Text: "hi"}, "", ""},
		{` {"text":"x", "cmd":"user"} `, User{Text: "x"}, "", ""},
		{`{"cmd":"approve","approval_id":"a","approved":false}`, Approve{ApprovalID: "a"}, "", ""},
		{`{"cmd":"approval_mode","mode":"readonly"}`, ApprovalMode{Mode: "readonly"}, "", ""},
		{`{"cmd":"reload"}`, Reload{}, "", ""},
		{`{"cmd":"cancel","why":"x"}`, Cancel{}, "", ""},
		{`{"cmd":"quit"}`, Quit{}, "", ""},
		{`{"cmd":"user"}`, nil, "user", `user: missing "text"`},
		{`{"cmd":"user","text":null}`, nil, "user", `"text" must be a string, got null`},
		{`{"cmd":"user","text":["a"]}`, nil, "user", `"text" must be a string, got array`},
		{`{"cmd":"approve","approval_id":"a"}`, nil, "approve", `missing "approved"`},
		{`{"cmd":"approve","approval_id":"a","approved":1}`, nil, "approve", `"approved" must be a boolean, got number`},
		{`{"cmd":"approval_mode","mode":"yolo"}`, nil, "approval_mode", `must be one of auto, ask, readonly`},
		{`{"cmd":"fly"}`, nil, "", `unknown cmd "fly"`},
		{`{"cmd":1}`, nil, "", `"cmd" must be a string, got number`},
		{`{}`, nil, "", `missing "cmd"`},
		{`[]`, nil, "", `expected a JSON object, got array`},
		{`"user"`, nil, "", `expected a JSON object, got string`},
		{`null`, nil, "", `expected a JSON object, got null`},
		{`{"cmd":"user","text":"x"`, nil, "", `malformed JSON`},
		{`{"cmd":"user","text":"x"} {}`, nil, "", `malformed JSON`},
	}
	for _, tt := range tests {
		got, err := DecodeCommand([]byte(tt.line))
		if tt.errHas == "" {
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s: got %#v, %v; want %#v", tt.line, got, err, tt.want)
			}
			continue
		}
		var ce *CommandError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %#v, %v; want a CommandError", tt.line, got, err)
			continue
		}
		if ce.Name != tt.errName || !strings.Contains(ce.Msg, tt.errHas) {
			t.Errorf("%s: got error %q (name %q); want name %q containing %q", tt.line, ce.Msg, ce.Name, tt.errName, tt.errHas)
		}
	}
}

const hello = `{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"0.1.0","project":"/p","continued":false}`

// ev builds an event line of session s.
func ev(typ, fields string) string {
	if fields != "" {
		fields = "," + fields
	}
	return `{"session_id":"s","type":"` + typ + `"` + fields + `}`
}

var (
	budget  = ev("budget", `"used_tokens":1,"context_tokens":10`)
	done    = func(r string) string { return ev("done", `"stop_reason":"`+r+`"`) }
	tok     = func(s string) string { return ev("token", `"text":"`+s+`"`) }
	msgDone = func(s string) string { return ev("message_done", `"text":"`+s+`"`) }
	errLine = ev("error", `"message":"boom"`)
	perr    = `{"type":"protocol_error","message":"bad"}`
	tStart  = func(id string) string { return ev("tool_start", `"call_id":"`+id+`","name":"t","args":{}`) }
	tEnd    = func(id string) string { return ev("tool_end", `"call_id":"`+id+`","ok":true,"output":""`) }
)

func TestCheckerAcceptsContractStreams(t *testing.T) {
	streams := map[string][]string{
		"hello only":         {hello},
		"plain turn":         {hello, budget, tok("a"), tok("b"), msgDone("ab"), done("stop")},
		"unknown stop":       {hello, budget, tok("a"), msgDone("a"), done("weird_vendor_reason")},
		"empty turn":         {hello, budget, done("cancelled")},
		"refused":            {hello, perr, done("refused")},
		"in-flight refusal":  {hello, budget, tok("a"), perr, tok("b"), msgDone("ab"), done("stop")},
		"tool loop":          {hello, budget, tok("x"), msgDone("x"), tStart("c1"), tEnd("c1"), tok("y"), msgDone("y"), done("stop")},
		"truncated":          {hello, budget, tok("x"), msgDone("x"), errLine, done("truncated")},
		"truncated no text":  {hello, budget, errLine, done("truncated")},
		"stream error":       {hello, budget, tok("x"), errLine, done("error")},
		"retry then text":    {hello, budget, ev("thinking", `"text":"t"`), ev("retry", `"attempt":2,"max_attempts":3,"reason":"529"`), tok("x"), msgDone("x"), done("stop")},
		"ack and refrozen":   {hello, `{"type":"approval_mode","mode":"ask"}`, ev("refrozen", `"tools":[],"skills":[],"changes":[]`)},
		"continued":          {`{"type":"hello","proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"0.1.0","project":"/p","continued":true}`, `{"type":"transcript","session_id":"s","messages":[{"role":"user","content":"hi"}],"truncated":false}`, budget, done("stop")},
		"approval":           {hello, budget, tStart("c"), ev("approval_request", `"approval_id":"a","name":"t","summary":"","detail":"","reason":"gate","source_path":"","source_sha":""`), ev("approval_settled", `"approval_id":"a","outcome":"approved"`), tEnd("c"), done("stop")},
		"turn refused":       {hello, budget, tok("x"), msgDone("x"), ev("turn_refused", `"hook":"h","reason":"r","continuation":0,"continuations_left":7`), tok("y"), msgDone("y"), done("stop")},
		"usage after done":   {hello, budget, tok("x"), ev("usage", `"prompt_tokens":1,"completion_tokens":1,"cached_tokens":null`), msgDone("x"), done("stop")},
		"two turns":          {hello, budget, done("stop"), budget, tok("x"), msgDone("x"), done("stop")},
		"cancel mid-stream":  {hello, budget, tok("x"), msgDone("x"), done("cancelled")},
		"protocol_error any": {hello, perr, budget, perr, done("stop"), perr},
	}
	for name, lines := range streams {
		if errs := checkLines(lines); len(errs) > 0 {
			t.Errorf("%s: rejected: %v", name, errs)
		}
	}
}

func TestCheckerRejectsViolations(t *testing.T) {
	tests := []struct {
		name   string
		lines  []string
		errHas string
	}{
		{"empty", nil, "no hello"},
		{"no hello", []string{budget}, "first line must be hello"},
		{"bad proto", []string{strings.Replace(hello, "stdio/6", "stdio/5", 1)}, `"proto" must be "openmax-stdio/6"`},
		{"second hello", []string{hello, hello}, "hello only as the first line"},
		{"transcript uninvited", []string{hello, `{"type":"transcript","session_id":"s","messages":[],"truncated":false}`}, "transcript only right after"},
		{"continued without transcript", []string{strings.Replace(hello, `"continued":false`, `"continued":true`, 1), budget}, "must be followed by transcript"},
		{"missing session_id", []string{hello, `{"type":"budget","used_tokens":1,"context_tokens":1}`}, `missing "session_id"`},
		{"wrong session_id", []string{hello, strings.Replace(budget, `"s"`, `"t"`, 1)}, "differs from hello"},
		{"protocol_error with session", []string{hello, `{"session_id":"s","type":"protocol_error","message":"m"}`}, "must not carry session_id"},
		{"unknown type", []string{hello, ev("tokens", `"text":"x"`)}, `unknown type "tokens"`},
		{"wrong field type", []string{hello, budget, ev("token", `"text":1`)}, `"text" must be a string, got number`},
		{"missing field", []string{hello, budget, ev("tool_end", `"call_id":"c","ok":true`)}, `missing "output"`},
		{"extra field", []string{hello, budget, ev("token", `"text":"x","y":1`)}, `unexpected field "y"`},
		{"negative", []string{hello, ev("budget", `"used_tokens":-1,"context_tokens":1`)}, "must not be negative"},
		{"not integer", []string{hello, ev("budget", `"used_tokens":1.5,"context_tokens":1`)}, "must be an integer"},
		{"bad enum", []string{hello, budget, ev("approval_settled", `"approval_id":"a","outcome":"maybe"`)}, "must be one of"},
		{"cached_tokens missing", []string{hello, budget, ev("usage", `"prompt_tokens":1,"completion_tokens":1`)}, `missing "cached_tokens"`},
		{"env empty", []string{hello, budget, ev("approval_request", `"approval_id":"a","name":"t","summary":"","detail":"","reason":"gate","source_path":"","source_sha":"","env":[]`)}, "omitted rather than empty"},
		{"not json", []string{hello, "{nope"}, "not a JSON object"},
		{"not utf8", []string{hello, "{\"type\":\"\xff\"}"}, "not valid UTF-8"},
		{"done without turn", []string{hello, done("stop")}, "done with no turn open"},
		{"duplicated done", []string{hello, budget, done("stop"), done("stop")}, "done with no turn open"},
		{"token outside turn", []string{hello, tok("x")}, "outside a turn"},
		{"dropped done", []string{hello, budget, tok("x"), msgDone("x"), tok("y"), msgDone("y"), done("stop")}, "was a done dropped"},
		{"dropped done before the next turn", []string{hello, budget, tok("x"), msgDone("x"), budget, done("stop")}, "budget inside a turn"},
		{"dropped done at end", []string{hello, budget, tok("x"), msgDone("x")}, "ended inside a turn"},
		{"done before message_done", []string{hello, budget, tok("x"), done("stop"), msgDone("x")}, "never closed"},
		{"message_done text mismatch", []string{hello, budget, tok("x"), msgDone("y"), done("stop")}, "differs from the run"},
		{"retry after text", []string{hello, budget, tok("x"), ev("retry", `"attempt":2,"max_attempts":3,"reason":"r"`)}, "must not be retried"},
		{"retry attempt 1", []string{hello, budget, ev("retry", `"attempt":1,"max_attempts":3,"reason":"r"`)}, "outside 2..max_attempts"},
		{"error then stop", []string{hello, budget, tok("x"), errLine, done("stop")}, "must end error or truncated"},
		{"error without line", []string{hello, budget, done("error")}, "must directly follow an error line"},
		{"truncated without message_done", []string{hello, budget, tok("x"), errLine, done("truncated")}, "closed by message_done before the error"},
		{"events after error", []string{hello, budget, errLine, tok("x")}, "after an error line the turn must end"},
		{"refused without protocol_error", []string{hello, done("refused")}, "must follow a protocol_error"},
		{"refused in flight", []string{hello, budget, perr, done("refused")}, "while a turn is in flight"},
		{"tool without end", []string{hello, budget, tStart("c"), done("stop")}, "has no tool_end"},
		{"tool_end unknown", []string{hello, budget, tEnd("c")}, "has no running tool_start"},
		{"tool during run", []string{hello, budget, tok("x"), tStart("c")}, "during an open run"},
		{"refrozen in turn", []string{hello, budget, ev("refrozen", `"tools":[],"skills":[],"changes":[]`)}, "while a turn is in flight"},
		{"approval pending at done", []string{hello, budget, ev("approval_request", `"approval_id":"a","name":"t","summary":"","detail":"","reason":"gate","source_path":"","source_sha":""`), done("cancelled")}, "still pending"},
		{"turn_refused without message_done", []string{hello, budget, ev("turn_refused", `"hook":"h","reason":"r","continuation":0,"continuations_left":7`)}, "must follow the refused completion"},
	}
	for _, tt := range tests {
		errs := checkLines(tt.lines)
		if len(errs) == 0 {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		if !strings.Contains(errs[0].Error(), tt.errHas) {
			t.Errorf("%s: first violation %q, want it to contain %q", tt.name, errs[0], tt.errHas)
		}
	}
}

func checkLines(lines []string) []error {
	var errs []error
	_, err := CheckStreamStrict(strings.NewReader(strings.Join(lines, "\n")), func(v Verdict) {
		if v.Err != nil {
			errs = append(errs, v.Err)
		}
	})
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

func TestCheckStreamLongLinesAndVerdicts(t *testing.T) {
	long := ev("token", `"text":"`+strings.Repeat("x", 200_000)+`"`)
	in := strings.Join([]string{hello, budget, long, msgDone(strings.Repeat("x", 200_000)), done("stop")}, "\n") + "\n"
	var lines []int
	bad, err := CheckStreamStrict(strings.NewReader(in), func(v Verdict) {
		if v.Err != nil {
			t.Errorf("line %d: %v", v.Line, v.Err)
		}
		lines = append(lines, v.Line)
	})
	if err != nil || bad != 0 {
		t.Fatalf("bad=%d err=%v", bad, err)
	}
	if !reflect.DeepEqual(lines, []int{1, 2, 3, 4, 5}) {
		t.Errorf("verdict lines %v", lines)
	}
}

func TestWriterWholeLinesAndFailure(t *testing.T) {
	var lines lineRecorder
	w := NewWriter(&lines, "s")
	if err := w.Event(Token{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Line(ProtocolError{Message: "m"}); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"session_id":"s","type":"token","text":"x"}`, `{"type":"protocol_error","message":"m"}`}
	if !reflect.DeepEqual(lines.got, want) {
		t.Errorf("got lines %q, want %q", lines.got, want)
	}
	broken := errors.New("broken pipe")
	fw := NewWriter(failWriter{broken}, "s")
	if err := fw.Event(Token{}); !errors.Is(err, broken) {
		t.Fatalf("Event on a failing writer: %v, want it to wrap %v", err, broken)
	}
	select {
	case <-fw.Failed():
	default:
		t.Error("Failed not closed after a write error")
	}
	if err := fw.Line(ProtocolError{Message: "m"}); !errors.Is(err, broken) {
		t.Errorf("Line after a write error: %v, want the first error again", err)
	}
	if !errors.Is(fw.Err(), broken) {
		t.Errorf("Err after a write error: %v", fw.Err())
	}
}

// lineRecorder keeps the lines handed to it, as strings.
type lineRecorder struct{ got []string }

func (r *lineRecorder) WriteLine(line []byte) error {
	r.got = append(r.got, string(line))
	return nil
}

type failWriter struct{ err error }

func (f failWriter) WriteLine([]byte) error { return f.err }

func TestCheckerInputAccounting(t *testing.T) {
	const (
		user  = `{"cmd":"user","text":"hi"}`
		empty = `{"cmd":"user","text":""}`
		quit  = `{"cmd":"quit"}`
		bogus = `{"cmd":"bogus"}`
	)
	pe := func(n int) string { return `{"type":"protocol_error","message":"line ` + itoaTest(n) + `: x"}` }
	tests := []struct {
		name   string
		stdin  []string
		out    []string
		errHas string // "" means accepted
	}{
		{"one turn", []string{user}, []string{hello, budget, done("stop")}, ""},
		{"in-flight refusal has no done", []string{user, user}, []string{hello, budget, pe(2), done("stop")}, ""},
		{"refused empty text", []string{empty, user}, []string{hello, pe(1), done("refused"), budget, done("stop")}, ""},
		{"a done missing", []string{user, user}, []string{hello, budget, done("stop")}, "2 user commands were admitted"},
		{"an extra turn", []string{user}, []string{hello, budget, done("stop"), budget, done("stop")}, "but 2 turns ended with done"},
		{"unread after quit", []string{user, quit, user}, []string{hello, budget, done("stop")}, ""},
		{"answer after the final done of a quit", []string{user, quit, bogus}, []string{hello, budget, done("stop"), pe(3)}, "comes after the final done"},
		{"answer during the drain", []string{user, quit, bogus}, []string{hello, budget, pe(3), done("stop")}, ""},
		{"malformed user is a user", []string{`{"cmd":"user","text":1}`}, []string{hello, pe(1), done("refused")}, ""},
	}
	for _, tt := range tests {
		c := NewChecker(Strict())
		c.SetInput([]byte(strings.Join(tt.stdin, "\n") + "\n"))
		var errs []error
		_, err := c.Stream(strings.NewReader(strings.Join(tt.out, "\n")), func(v Verdict) {
			if v.Err != nil {
				errs = append(errs, v.Err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tt.errHas == "" && len(errs) > 0:
			t.Errorf("%s: rejected: %v", tt.name, errs)
		case tt.errHas != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.errHas)):
			t.Errorf("%s: got %v, want an error containing %q", tt.name, errs, tt.errHas)
		}
	}
}

func itoaTest(n int) string { b, _ := json.Marshal(n); return string(b) }
