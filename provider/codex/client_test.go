package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer is the server end of an in-memory connection, driven by the test
// line by line.
type peer struct {
	t   *testing.T
	in  *bufio.Reader // what the client wrote
	out io.WriteCloser
}

// connectPeer starts a client over pipes to a peer that answers
// initialize, and returns both once the client is initialized.
func connectPeer(t *testing.T, o Options) (*Client, *peer) {
	t.Helper()
	cr, pw := io.Pipe() // peer → client
	pr, cw := io.Pipe() // client → peer
	p := &peer{t: t, in: bufio.NewReader(pr), out: pw}
	type result struct {
		cl  *Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		cl, err := Connect(context.Background(), cr, cw, o)
		done <- result{cl, err}
	}()
	init := p.expect(MethodInitialize)
	var ip InitializeParams
	if err := json.Unmarshal(init.Params, &ip); err != nil {
		t.Fatal(err)
	}
	if ip.Capabilities == nil || !ip.Capabilities.ExperimentalAPI {
		t.Fatalf("initialize without capabilities.experimentalApi: %s", init.Params)
	}
	p.reply(init.ID, `{"userAgent":"fake/0","codexHome":"/h","platformFamily":"unix","platformOs":"linux"}`)
	p.expect(MethodInitialized)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() {
		_ = pw.Close()
		_ = r.cl.Close(context.Background())
	})
	return r.cl, p
}

// next reads the client's next line.
func (p *peer) next() message {
	p.t.Helper()
	line, err := p.in.ReadBytes('\n')
	if err != nil {
		p.t.Fatalf("peer read: %v", err)
	}
	if bytes.Contains(line, []byte(`"jsonrpc"`)) {
		p.t.Fatalf("the client sent a jsonrpc member: %s", line)
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		p.t.Fatalf("peer: %v in %s", err, line)
	}
	return m
}

func (p *peer) expect(method string) message {
	p.t.Helper()
	m := p.next()
	if m.Method != method {
		p.t.Fatalf("client sent %q, want %q", m.Method, method)
	}
	return m
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.out, line+"\n"); err != nil {
		p.t.Fatalf("peer write: %v", err)
	}
}

func (p *peer) reply(id json.RawMessage, result string) {
	p.send(fmt.Sprintf(`{"id":%s,"result":%s}`, id, result))
}

func (p *peer) notify(method, params string) {
	p.send(fmt.Sprintf(`{"method":%q,"params":%s,"emittedAtMs":1767225600000}`, method, params))
}

// startThread answers thread/start with thread id.
func (p *peer) startThread(id string) message {
	p.t.Helper()
	m := p.expect(MethodThreadStart)
	p.reply(m.ID, fmt.Sprintf(`{"thread":{"id":%q},"model":"m"}`, id))
	return m
}

func takeEvent(t *testing.T, cl *Client) Event {
	t.Helper()
	select {
	case ev, ok := <-cl.Events():
		if !ok {
			t.Fatal("Events closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return Event{}
}

func TestThreadAndTurnRequests(t *testing.T) {
	var transcript bytes.Buffer
	cl, p := connectPeer(t, Options{Transcript: &transcript})
	ctx := context.Background()

	var s *Session
	done := make(chan error, 1)
	go func() {
		var err error
		s, err = cl.StartThread(ctx, ThreadOptions{Cwd: "/w", Model: "gpt-x", DeveloperInstructions: "be brief", Reminder: "stay in /w"})
		done <- err
	}()
	m := p.startThread("th1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var sp map[string]any
	_ = json.Unmarshal(m.Params, &sp)
	for k, want := range map[string]any{"cwd": "/w", "model": "gpt-x", "approvalPolicy": "never", "sandbox": "danger-full-access", "developerInstructions": "be brief"} {
		if sp[k] != want {
			t.Errorf("thread/start %s = %v, want %v", k, sp[k], want)
		}
	}
	if s.ID != "th1" {
		t.Fatalf("session id %q", s.ID)
	}

	// turn/start: images first as data URLs, then the text; the reminder
	// as additional context; a model switch rides the next turn.
	s.SetModel("gpt-y")
	go func() {
		_, err := s.Send(ctx, "look", Image{MIME: "image/png", Data: []byte{1, 2, 3}})
		done <- err
	}()
	m = p.expect(MethodTurnStart)
	p.reply(m.ID, `{"turn":{"id":"tu1","status":"inProgress","items":[]}}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var tp TurnStartParams
	if err := json.Unmarshal(m.Params, &tp); err != nil {
		t.Fatal(err)
	}
	if len(tp.Input) != 2 || tp.Input[0].Type != UserInputTypeImage || tp.Input[0].URL != "data:image/png;base64,AQID" || tp.Input[1].Type != UserInputTypeText || tp.Input[1].Text != "look" {
		t.Fatalf("turn/start input = %s", m.Params)
	}
	if tp.Model != "gpt-y" || tp.ThreadID != "th1" {
		t.Fatalf("turn/start model/thread = %q/%q", tp.Model, tp.ThreadID)
	}
	if e := tp.AdditionalContext[ReminderSource]; e.Kind != AdditionalContextKindApplication || e.Value != "stay in /w" {
		t.Fatalf("additionalContext = %s", m.Params)
	}
	if s.ActiveTurn() != "tu1" {
		t.Fatalf("active turn after Send = %q", s.ActiveTurn())
	}

	// steer names the active turn.
	go func() { done <- s.Steer(ctx, "also this") }()
	m = p.expect(MethodTurnSteer)
	p.reply(m.ID, `{"turnId":"tu1"}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var st TurnSteerParams
	_ = json.Unmarshal(m.Params, &st)
	if st.ExpectedTurnID != "tu1" || st.Input[0].Text != "also this" {
		t.Fatalf("turn/steer = %s", m.Params)
	}

	// A fork at the running turn is refused before anything is sent.
	if _, err := cl.ForkThread(ctx, "th1", "tu1", ThreadOptions{}); !errors.Is(err, ErrTurnRunning) {
		t.Fatalf("fork at the running turn: %v", err)
	}

	// interrupt names it too; turn/completed clears it.
	go func() { done <- s.Interrupt(ctx) }()
	m = p.expect(MethodTurnInterrupt)
	var ip TurnInterruptParams
	_ = json.Unmarshal(m.Params, &ip)
	if ip.TurnID != "tu1" || ip.ThreadID != "th1" {
		t.Fatalf("turn/interrupt = %s", m.Params)
	}
	p.reply(m.ID, `{}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.notify(MethodTurnCompleted, `{"threadId":"th1","turn":{"id":"tu1","status":"interrupted","items":[]}}`)
	ev := takeEvent(t, cl)
	v, err := ev.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if tc := v.(*TurnCompletedNotification); tc.Turn.Status != TurnStatusInterrupted || ev.EmittedAtMs != 1767225600000 {
		t.Fatalf("decoded %+v", ev)
	}
	if s.ActiveTurn() != "" {
		t.Fatalf("active turn after turn/completed = %q", s.ActiveTurn())
	}
	if err := s.Interrupt(ctx); !errors.Is(err, ErrNoActiveTurn) {
		t.Fatalf("interrupt with no turn: %v", err)
	}

	// compact and read.
	go func() { done <- s.Compact(ctx) }()
	m = p.expect(MethodThreadCompactStart)
	p.reply(m.ID, `{}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		th, err := s.Read(ctx)
		if err == nil && th.Model != "gpt-y" {
			err = fmt.Errorf("read model %q", th.Model)
		}
		done <- err
	}()
	m = p.expect(MethodThreadRead)
	p.reply(m.ID, `{"thread":{"id":"th1","model":"gpt-y"}}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// resume keeps the id and sends no tools; fork gets a new one.
	go func() {
		r, err := cl.ResumeThread(ctx, "th1", ThreadOptions{Cwd: "/w"})
		if err == nil && r.ID != "th1" {
			err = fmt.Errorf("resumed id %q", r.ID)
		}
		done <- err
	}()
	m = p.expect(MethodThreadResume)
	if bytes.Contains(m.Params, []byte("dynamicTools")) {
		t.Fatalf("thread/resume carries tools: %s", m.Params)
	}
	p.reply(m.ID, `{"thread":{"id":"th1"}}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := cl.ForkThread(ctx, "th1", "tu1", ThreadOptions{})
		if err == nil && f.ID != "th2" {
			err = fmt.Errorf("forked id %q", f.ID)
		}
		done <- err
	}()
	m = p.expect(MethodThreadFork)
	var fp ThreadForkParams
	_ = json.Unmarshal(m.Params, &fp)
	if fp.ThreadID != "th1" || fp.LastTurnID != "tu1" {
		t.Fatalf("thread/fork = %s", m.Params)
	}
	p.reply(m.ID, `{"thread":{"id":"th2","forkedFromId":"th1"}}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Every line crossed into the transcript, in order, both ways.
	var dirs []string
	for _, l := range strings.Split(strings.TrimSpace(transcript.String()), "\n") {
		var tl TranscriptLine
		if err := json.Unmarshal([]byte(l), &tl); err != nil {
			t.Fatalf("transcript line %s: %v", l, err)
		}
		dirs = append(dirs, tl.Dir)
	}
	if got := strings.Join(dirs[:5], ","); got != "send,recv,send,send,recv" {
		t.Fatalf("transcript directions start %s", got)
	}
}

func TestRequestErrorsAreRPCErrors(t *testing.T) {
	cl, p := connectPeer(t, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := cl.StartThread(context.Background(), ThreadOptions{})
		done <- err
	}()
	m := p.expect(MethodThreadStart)
	p.send(fmt.Sprintf(`{"id":%s,"error":{"code":-32600,"message":"dynamic tool name is reserved: mcp__t"}}`, m.ID))
	err := <-done
	var rpc *RPCError
	if !errors.As(err, &rpc) || rpc.Code != -32600 || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("error = %v", err)
	}
}

func TestReservedToolNamesAreRefused(t *testing.T) {
	h := func(context.Context, ToolCall) (string, error) { return "", nil }
	for _, nss := range [][]Namespace{
		{{Name: "mcp__x", Tools: []Tool{{Name: "t", Handler: h}}}},
		{{Name: "openmax", Tools: []Tool{{Name: "mcp__t", Handler: h}}}},
		{{Name: "openmax", Tools: []Tool{{Name: "t"}}}},
		{{Name: "openmax", Tools: []Tool{{Name: "t", Handler: h}, {Name: "t", Handler: h}}}},
	} {
		if _, err := Connect(context.Background(), strings.NewReader(""), nopWriteCloser{io.Discard}, Options{Tools: nss}); err == nil {
			t.Errorf("tools %+v accepted", nss)
		}
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func TestServerRequests(t *testing.T) {
	calls := make(chan ToolCall, 4)
	tools := []Namespace{{Name: "openmax", Description: "openmax tools", Tools: []Tool{
		{Name: "read_file", Description: "read", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
			Handler: func(_ context.Context, c ToolCall) (string, error) {
				calls <- c
				if strings.Contains(string(c.Arguments), "missing") {
					return "", errors.New("no such file: missing")
				}
				return "contents", nil
			}},
		{Name: "boom", Description: "panics", Handler: func(context.Context, ToolCall) (string, error) { panic("kaboom") }},
	}}}
	cl, p := connectPeer(t, Options{Tools: tools})
	go func() { _, _ = cl.StartThread(context.Background(), ThreadOptions{}) }()
	m := p.startThread("th1")
	var sp ThreadStartParams
	if err := json.Unmarshal(m.Params, &sp); err != nil {
		t.Fatal(err)
	}
	if len(sp.DynamicTools) != 1 || sp.DynamicTools[0].Type != DynamicToolSpecTypeNamespace || sp.DynamicTools[0].Name != "openmax" ||
		len(sp.DynamicTools[0].Tools) != 2 || sp.DynamicTools[0].Tools[0].Name != "read_file" || !strings.Contains(string(sp.DynamicTools[0].Tools[0].InputSchema), "path") {
		t.Fatalf("dynamicTools = %s", m.Params)
	}

	for _, tt := range []struct {
		name, request, want string
	}{
		{"tool ok", `{"id":0,"method":"item/tool/call","params":{"threadId":"th1","turnId":"tu1","callId":"c1","namespace":"openmax","tool":"read_file","arguments":{"path":"a"}}}`,
			`{"id":0,"result":{"contentItems":[{"text":"contents","type":"inputText"}],"success":true}}`},
		{"tool error", `{"id":1,"method":"item/tool/call","params":{"threadId":"th1","turnId":"tu1","callId":"c2","namespace":"openmax","tool":"read_file","arguments":{"path":"missing"}}}`,
			`{"id":1,"result":{"contentItems":[{"text":"no such file: missing","type":"inputText"}],"success":false}}`},
		{"tool panics", `{"id":2,"method":"item/tool/call","params":{"threadId":"th1","turnId":"tu1","callId":"c3","namespace":"openmax","tool":"boom","arguments":{}}}`,
			`{"id":2,"result":{"contentItems":[{"text":"tool boom crashed: kaboom","type":"inputText"}],"success":false}}`},
		{"unknown tool", `{"id":3,"method":"item/tool/call","params":{"threadId":"th1","turnId":"tu1","callId":"c4","namespace":"other","tool":"x","arguments":{}}}`,
			`{"id":3,"result":{"contentItems":[{"text":"no dynamic tool \"x\" in namespace \"other\"","type":"inputText"}],"success":false}}`},
		{"command approval", `{"id":"s4","method":"item/commandExecution/requestApproval","params":{"threadId":"th1","turnId":"tu1","itemId":"i"}}`,
			`{"id":"s4","result":{"decision":"accept"}}`},
		{"file approval", `{"id":5,"method":"item/fileChange/requestApproval","params":{"threadId":"th1","turnId":"tu1","itemId":"i"}}`,
			`{"id":5,"result":{"decision":"accept"}}`},
		{"legacy exec approval", `{"id":6,"method":"execCommandApproval","params":{}}`, `{"id":6,"result":{"decision":"approved"}}`},
		{"user input", `{"id":7,"method":"item/tool/requestUserInput","params":{}}`,
			`{"id":7,"error":{"code":-32601,"message":"openmax does not answer item/tool/requestUserInput"}}`},
	} {
		p.send(tt.request)
		line, err := p.in.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(line)); got != tt.want {
			t.Errorf("%s: answered %s, want %s", tt.name, got, tt.want)
		}
	}
	c := <-calls
	if c.CallID != "c1" || c.ThreadID != "th1" || c.TurnID != "tu1" || string(c.Arguments) != `{"path":"a"}` {
		t.Fatalf("handler saw %+v", c)
	}
}

func TestBadLinesAreReportedAndEventsStillFlow(t *testing.T) {
	var mu sync.Mutex
	var bad []string
	cl, p := connectPeer(t, Options{OnBadLine: func(line []byte, err error) {
		mu.Lock()
		defer mu.Unlock()
		bad = append(bad, err.Error())
	}})
	p.send(`not json`)
	p.send(`{"method":`)
	p.send(`[1,2]`)
	p.send(`{"id":99,"result":{}}`)
	p.notify("brand/new", `{"x":1}`)
	p.notify(MethodItemAgentMessageDelta, `{"threadId":"t","turnId":"u","itemId":"i","delta":"hi"}`)
	ev := takeEvent(t, cl)
	if ev.Method != "brand/new" {
		t.Fatalf("first event %q, want the unknown notification delivered", ev.Method)
	}
	if _, err := ev.Decode(); err == nil {
		t.Fatal("decoding an unknown notification succeeded")
	}
	ev = takeEvent(t, cl)
	v, err := ev.Decode()
	if err != nil || v.(*AgentMessageDeltaNotification).Delta != "hi" {
		t.Fatalf("delta %v %v", v, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"not a JSON object", "does not parse", "not a JSON object", "no request in flight", "unknown notification \"brand/new\""}
	if len(bad) != len(want) {
		t.Fatalf("bad lines %q", bad)
	}
	for i, w := range want {
		if !strings.Contains(bad[i], w) {
			t.Errorf("bad line %d: %q, want it to say %q", i, bad[i], w)
		}
	}
}

func TestServerEndFailsCallsAndClosesEvents(t *testing.T) {
	cl, p := connectPeer(t, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := cl.StartThread(context.Background(), ThreadOptions{})
		done <- err
	}()
	p.expect(MethodThreadStart)
	p.notify(MethodTurnStarted, `{"threadId":"t","turn":{"id":"u"}}`)
	_ = p.out.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("call after the server ended: %v", err)
	}
	if ev := takeEvent(t, cl); ev.Method != MethodTurnStarted {
		t.Fatalf("event read before the end was lost: %+v", ev)
	}
	if _, ok := <-cl.Events(); ok {
		t.Fatal("Events not closed after the end")
	}
	if _, err := cl.StartThread(context.Background(), ThreadOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on an ended client: %v", err)
	}
}

func TestTranscriptRedactsEmails(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"method":"account/updated","params":{"email":"a@b.c","plan":"pro"}}`, `{"dir":"recv","msg":{"method":"account/updated","params":{"email":"[redacted]","plan":"pro"}}}`},
		{`{"a":{"email" : null,"x":{"email":"q\"@r"}}}`, `{"dir":"recv","msg":{"a":{"email":"[redacted]","x":{"email":"[redacted]"}}}}`},
		{`{"text":"write to \"email\": \"x@y\""}`, `{"dir":"recv","msg":{"text":"write to \"email\": \"x@y\""}}`},
		{`not json`, `{"dir":"recv","msg":"not json"}`},
		{`{"cmd":"echo a >&2 <x>"}`, `{"dir":"recv","msg":{"cmd":"echo a >&2 <x>"}}`},
		{`echo <&>`, `{"dir":"recv","msg":"echo <&>"}`},
	} {
		got, err := TranscriptBytes(DirRecv, []byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("TranscriptBytes(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if _, err := TranscriptBytes("sideways", []byte(`{}`)); err == nil {
		t.Fatal("a bad direction was accepted")
	}
}

// The server abandons an unanswered tool call when its turn ends; the
// handler is told to stop then.
func TestToolCallIsCancelledWhenItsTurnEnds(t *testing.T) {
	started := make(chan struct{}, 2)
	stopped := make(chan error, 2)
	tools := []Namespace{{Name: "openmax", Tools: []Tool{{Name: "wait", Handler: func(ctx context.Context, _ ToolCall) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- ctx.Err()
		return "", ctx.Err()
	}}}}}
	_, p := connectPeer(t, Options{Tools: tools})
	p.send(`{"id":0,"method":"item/tool/call","params":{"threadId":"th1","turnId":"tu1","callId":"c1","namespace":"openmax","tool":"wait","arguments":{}}}`)
	<-started
	p.notify(MethodTurnCompleted, `{"threadId":"th1","turn":{"id":"tu1","status":"interrupted","items":[]}}`)
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler's context ended with %v", err)
	}
	// A call of a turn that already ended starts cancelled.
	p.send(`{"id":1,"method":"item/tool/call","params":{"threadId":"th1","turnId":"tu1","callId":"c2","namespace":"openmax","tool":"wait","arguments":{}}}`)
	for i := 0; i < 2; i++ {
		line, err := p.in.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(line), `"success":false`) || !strings.Contains(string(line), "context canceled") {
			t.Fatalf("answer %s", line)
		}
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("late call's context: %v", err)
	}
}

// With ToolCallsAsEvents a tool call arrives on Events in order with the
// notifications around it, and Respond answers it.
func TestToolCallsAsEventsKeepOrder(t *testing.T) {
	cl, p := connectPeer(t, Options{ToolCallsAsEvents: true, Tools: []Namespace{{Name: "openmax", Tools: []Tool{{Name: "read_file"}}}}})
	p.notify(MethodItemAgentMessageDelta, `{"threadId":"th1","turnId":"tu1","itemId":"m1","delta":"before"}`)
	p.send(`{"id":0,"method":"item/tool/call","params":{"threadId":"th1","turnId":"tu1","callId":"c1","namespace":"openmax","tool":"read_file","arguments":{}}}`)
	p.notify(MethodItemAgentMessageDelta, `{"threadId":"th1","turnId":"tu1","itemId":"m2","delta":"after"}`)
	first, call, last := takeEvent(t, cl), takeEvent(t, cl), takeEvent(t, cl)
	if first.IsRequest() || !call.IsRequest() || last.IsRequest() || call.Method != MethodItemToolCall {
		t.Fatalf("events %q %q %q, want the call between the deltas", first.Method, call.Method, last.Method)
	}
	if err := first.Respond(nil, nil); err == nil {
		t.Fatal("a notification accepted a response")
	}
	responded := make(chan error, 1)
	go func() { // the pipe is unbuffered: the peer reads below
		responded <- call.Respond(DynamicToolCallResponse{Success: true, ContentItems: []DynamicToolCallOutputContentItem{{Type: DynamicToolCallOutputContentItemTypeInputText, Text: "x"}}}, nil)
	}()
	line, err := p.in.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(line)); got != `{"id":0,"result":{"contentItems":[{"text":"x","type":"inputText"}],"success":true}}` {
		t.Fatalf("answer %s", got)
	}
	if err := <-responded; err != nil {
		t.Fatal(err)
	}
}

// A hostile server: a line over the cap is skipped and reported (the
// connection goes on), and events nobody takes stop the reading once
// MaxQueued are waiting (or MaxQueuedBytes of params), instead of growing
// without bound; nothing is dropped, and reading goes on as they are
// taken.
func TestHostileServerIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		count, nbytes int
	}{
		{"count", 50, 0},
		{"bytes", 0, 50 * 61}, // each params below is 61 bytes
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var bad []string
			full := make(chan struct{})
			var fullOnce sync.Once
			cl, p := connectPeer(t, Options{MaxLine: 1024, MaxQueued: tc.count, MaxQueuedBytes: tc.nbytes,
				onQueueFull: func() { fullOnce.Do(func() { close(full) }) },
				OnBadLine: func(_ []byte, err error) {
					mu.Lock()
					defer mu.Unlock()
					bad = append(bad, err.Error())
				}})
			p.send(`{"method":"item/agentMessage/delta","params":{"delta":"` + strings.Repeat("x", 5000) + `"}}`)
			p.notify(MethodItemAgentMessageDelta, `{"threadId":"t","turnId":"u","itemId":"i","delta":"after"}`)
			if ev := takeEvent(t, cl); !strings.Contains(string(ev.Params), `"after"`) {
				t.Fatalf("the line after the long one: %s", ev.Params)
			}
			mu.Lock()
			if len(bad) != 1 || !strings.Contains(bad[0], "longer than the 1024-byte limit") {
				t.Fatalf("bad lines %q", bad)
			}
			mu.Unlock()
			sent := make(chan struct{})
			go func() { // nobody takes these for now
				defer close(sent)
				for i := 0; i < 60; i++ {
					p.notify(MethodItemAgentMessageDelta, fmt.Sprintf(`{"threadId":"t","turnId":"u","itemId":"i","delta":"flood%03d"}`, i))
				}
			}()
			<-full // the reader waits for room
			cl.c.mu.Lock()
			queued, size := len(cl.c.queue), cl.c.queued
			cl.c.mu.Unlock()
			// The pump holds one more, on its way to Events.
			if tc.count > 0 && queued != tc.count || tc.nbytes > 0 && (size > tc.nbytes || size+61 <= tc.nbytes) {
				t.Fatalf("%d events (%d bytes) queued at the bound", queued, size)
			}
			select {
			case <-cl.Ended():
				t.Fatal("the connection was dropped")
			default:
			}
			for i := 0; i < 60; i++ {
				ev := takeEvent(t, cl)
				if want := fmt.Sprintf(`"flood%03d"`, i); !strings.Contains(string(ev.Params), want) {
					t.Fatalf("event %d: %s, want %s", i, ev.Params, want)
				}
			}
			<-sent
		})
	}
}

// TestOnEventDeliversInOrderOnTheReader: with Options.OnEvent every event
// (notifications and in-band requests) reaches it in the order read, a
// response is still routed to its call while events flow, the reader
// waits while OnEvent does (the server's next line is not taken), and
// Events, delivering nothing, closes after the last call, once the
// server's output ended.
func TestOnEventDeliversInOrderOnTheReader(t *testing.T) {
	got := make(chan Event, 16)
	hold := make(chan struct{})
	cl, p := connectPeer(t, Options{ToolCallsAsEvents: true, Tools: []Namespace{{Name: "openmax", Tools: []Tool{{Name: "read_file"}}}},
		OnEvent: func(ev Event) {
			got <- ev
			if ev.Method == MethodTurnStarted {
				<-hold // the reader waits here
			}
		}})
	started := make(chan error, 1)
	go func() {
		_, err := cl.StartThread(context.Background(), ThreadOptions{})
		started <- err
	}()
	p.notify(MethodItemAgentMessageDelta, `{"threadId":"th1","turnId":"tu1","itemId":"m1","delta":"a"}`)
	p.send(`{"id":0,"method":"item/tool/call","params":{"threadId":"th1","turnId":"tu1","callId":"c1","namespace":"openmax","tool":"read_file","arguments":{}}}`)
	p.startThread("th1")
	if err := <-started; err != nil {
		t.Fatalf("a call answered while events flow: %v", err)
	}
	p.notify(MethodTurnStarted, `{"threadId":"th1","turn":{"id":"tu1"}}`)
	for _, want := range []string{MethodItemAgentMessageDelta, MethodItemToolCall, MethodTurnStarted} {
		select {
		case ev := <-got:
			if ev.Method != want || (ev.Method == MethodItemToolCall) != ev.IsRequest() {
				t.Fatalf("event %q (request %v), want %q", ev.Method, ev.IsRequest(), want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10s", want)
		}
	}
	// The reader is held in OnEvent: a line the server writes now is
	// taken only once it returns.
	wrote := make(chan struct{})
	go func() {
		p.notify(MethodTurnCompleted, `{"threadId":"th1","turn":{"id":"tu1","status":"completed","items":[]}}`)
		_ = p.out.Close()
		close(wrote)
	}()
	select {
	case ev := <-got:
		t.Fatalf("%s delivered while OnEvent still ran", ev.Method)
	case <-cl.Ended():
		t.Fatal("the client ended while OnEvent still ran")
	default:
	}
	close(hold)
	<-wrote
	if ev := <-got; ev.Method != MethodTurnCompleted {
		t.Fatalf("last event %q", ev.Method)
	}
	select {
	case _, ok := <-cl.Events():
		if ok {
			t.Fatal("Events delivered an event OnEvent takes")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Events not closed after the server's output ended")
	}
	select {
	case ev := <-got:
		t.Fatalf("%s delivered after Events closed", ev.Method)
	default:
	}
}

// A server that exits at once can end before initialize is written (the
// write fails: its stdin is closed) or after (its stdout ends while the
// call waits). Which comes first is a race between its exit and our
// write, so both must read the same: the first line of what a user sees
// when codex will not start.
func TestServerGoneReadsTheSameWhicheverEndComesFirst(t *testing.T) {
	for _, stdinFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("stdin closed first %v", stdinFirst), func(t *testing.T) {
			cr, pw := io.Pipe() // server → client
			pr, cw := io.Pipe() // client → server
			if stdinFirst {
				_ = pr.Close() // the server's stdin: our write of initialize fails...
			} else {
				_ = pw.Close()                                 // the server's stdout ends before anything is written
				go func() { _, _ = io.Copy(io.Discard, pr) }() // its stdin, still open, takes what comes, as an OS pipe's buffer would
			}
			// ...and only then does its stdout end, as a process's does when
			// it exits.
			w := &afterWrite{WriteCloser: cw, then: func() { _ = pw.Close() }}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
			defer cancel()
			cl, err := Connect(ctx, cr, w, Options{})
			if err == nil {
				_ = cl.Close(ctx)
			}
			if err == nil || err.Error() != "codex: initialize: codex: app-server connection closed" || !errors.Is(err, ErrClosed) {
				t.Fatalf("Connect to a server that is gone: %v", err)
			}
		})
	}
}

// afterWrite calls then after each write.
type afterWrite struct {
	io.WriteCloser
	then func()
}

func (w *afterWrite) Write(b []byte) (int, error) {
	n, err := w.WriteCloser.Write(b)
	w.then()
	return n, err
}
