//go:build sdkpeers

// AWS's SDK is large, so these tests build only with -tags sdkpeers, like
// the other SDK peer tests (provider/fake): AWS's own Go client,
// github.com/aws/aws-sdk-go-v2/service/bedrockruntime, pointed over
// loopback HTTP at servers writing this package's encoders' bytes, must
// read them as the reply they encode; its requests must read back as what
// it asked and match the bodies this client writes; and its SigV4 signer
// must sign every request exactly as package sigv4 does.

package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/bedrock/sigv4"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/codectest"
	"github.com/openmax/openmax/provider/sse"
)

const peerTimeout = 10 * time.Second

// peerServer answers every request with the current body, and keeps the
// last request it took.
type peerServer struct {
	*httptest.Server
	mu       sync.Mutex
	body     []byte
	lastReq  *http.Request
	lastBody []byte
}

func newPeerServer(t *testing.T) *peerServer {
	s := &peerServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.lastReq, s.lastBody = r.Clone(context.Background()), b
		body := s.body
		s.mu.Unlock()
		w.Header().Set("Content-Type", ContentType)
		w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *peerServer) serve(body []byte) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

func (s *peerServer) last() (*http.Request, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastReq, s.lastBody
}

// sdkClient is AWS's client against srv, with static credentials and no
// retries.
func sdkClient(srv *peerServer) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testCreds.AccessKeyID, SecretAccessKey: testCreds.SecretAccessKey, SessionToken: testCreds.SessionToken}, nil
		}),
		Retryer: aws.NopRetryer{},
	})
}

// sdkFailure is a stream's failure as a StreamError: the SDK's API error
// code and message. AWS's client gives an exception it has no type for,
// sent without a message, the message UnknownError: that is an empty
// one.
func sdkFailure(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		msg := ae.ErrorMessage()
		var ge *smithy.GenericAPIError
		if errors.As(err, &ge) && msg == "UnknownError" {
			msg = ""
		}
		return &provider.StreamError{Type: ae.ErrorCode(), Message: msg}
	}
	return err
}

// TestPeersExceptions: every exception ConverseStream and
// InvokeModelWithResponseStream declare, as ExceptionFrame writes it,
// reaches AWS's client as its own error type with the message.
func TestPeersExceptions(t *testing.T) {
	srv := newPeerServer(t)
	sdk := sdkClient(srv)
	tests := []struct {
		typ    string
		invoke bool // declared by InvokeModelWithResponseStream only
		is     func(error) bool
	}{
		{"throttlingException", false, func(err error) bool { var e *types.ThrottlingException; return errors.As(err, &e) }},
		{"modelStreamErrorException", false, func(err error) bool { var e *types.ModelStreamErrorException; return errors.As(err, &e) }},
		{"serviceUnavailableException", false, func(err error) bool { var e *types.ServiceUnavailableException; return errors.As(err, &e) }},
		{"internalServerException", false, func(err error) bool { var e *types.InternalServerException; return errors.As(err, &e) }},
		{"validationException", false, func(err error) bool { var e *types.ValidationException; return errors.As(err, &e) }},
		{"modelTimeoutException", true, func(err error) bool { var e *types.ModelTimeoutException; return errors.As(err, &e) }},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
			defer cancel()
			var err error
			if tt.invoke {
				e := NewInvokeEncoder("m", "c", nil)
				srv.serve(append(e.Open(), e.Part(provider.Error{Err: &provider.StreamError{Type: tt.typ, Message: "it failed"}})...))
				out, ierr := sdk.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String("m"), Body: []byte(`{}`)})
				if ierr != nil {
					t.Fatal(ierr)
				}
				for range out.GetStream().Events() {
				}
				err = out.GetStream().Err()
			} else {
				e := NewConverseEncoder(nil)
				srv.serve(append(e.Open(), e.Part(provider.Error{Err: &provider.StreamError{Type: tt.typ, Message: "it failed"}})...))
				out, cerr := sdk.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("m")})
				if cerr != nil {
					t.Fatal(cerr)
				}
				for range out.GetStream().Events() {
				}
				err = out.GetStream().Err()
			}
			var ae smithy.APIError
			if !tt.is(err) || !errors.As(err, &ae) || ae.ErrorMessage() != "it failed" {
				t.Fatalf("AWS's client read %T %v", err, err)
			}
		})
	}
}

// sdkRead reads one reply with AWS's client (read), resending it when
// AWS's client lost its own connection: now and then (about one request
// in twenty under -race) its event stream reader fails with "use of
// closed network connection" in the middle of a body it reads whole the
// next time (the same bytes, served the same way; a race inside the SDK,
// seen with keep-alives on and off). Any other failure is the reading.
func sdkRead(t *rapid.T, read func(ctx context.Context) []provider.Part) []provider.Part {
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
		got := read(ctx)
		cancel()
		if err := errorOf(got); attempt < 20 && err != nil && errors.Is(err, net.ErrClosed) {
			t.Logf("attempt %d: AWS's client lost its connection: %v", attempt, err)
			continue
		}
		return got
	}
}

// TestPeersConverseStream: AWS's client reads what ConverseEncoder wrote
// as the reply it encodes, for random replies: text, reasoning and its
// signatures, tool calls with their input, the stop reason, the usage (the
// cache read counted apart), or an exception with its type and message.
func TestPeersConverseStream(t *testing.T) {
	srv := newPeerServer(t)
	sdk := sdkClient(srv)
	rapid.Check(t, func(t *rapid.T) {
		r := codectest.Draw(t, codectest.Wire{Signatures: true, Finishes: StopReasons})
		e := NewConverseEncoder(r.Usage)
		e.ArgChunk = rapid.IntRange(0, 8).Draw(t, "arg chunk")
		srv.serve(codectest.Encode(e, r.Parts))
		got := sdkRead(t, func(ctx context.Context) []provider.Part { return sdkConverse(t, ctx, sdk) })
		if !reflect.DeepEqual(got, r.Want) {
			t.Fatalf("AWS's client read\n%#v\nwant\n%#v\n(error %v, want %v)", got, r.Want, errorOf(got), errorOf(r.Want))
		}
	})
}

// sdkConverse is one ConverseStream reply as AWS's client reads it, in
// the provider's parts (the tool calls, usage and finish at the end, as
// the client folds them).
func sdkConverse(t *rapid.T, ctx context.Context, sdk *bedrockruntime.Client) []provider.Part {
	out, err := sdk.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("us.amazon.nova-micro-v1:0"),
		Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	stream := out.GetStream()
	defer stream.Close()
	var got []provider.Part
	type tool struct {
		id, name string
		input    strings.Builder
	}
	tools := map[int32]*tool{}
	var order []int32
	var usage *provider.Usage
	var finish *provider.Finish
	for ev := range stream.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				i := aws.ToInt32(v.Value.ContentBlockIndex)
				tools[i] = &tool{id: aws.ToString(tu.Value.ToolUseId), name: aws.ToString(tu.Value.Name)}
				order = append(order, i)
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			switch d := v.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				got = append(got, provider.TextDelta{Text: d.Value})
			case *types.ContentBlockDeltaMemberToolUse:
				tools[aws.ToInt32(v.Value.ContentBlockIndex)].input.WriteString(aws.ToString(d.Value.Input))
			case *types.ContentBlockDeltaMemberReasoningContent:
				switch rc := d.Value.(type) {
				case *types.ReasoningContentBlockDeltaMemberText:
					got = append(got, provider.ThinkingDelta{Text: rc.Value})
				case *types.ReasoningContentBlockDeltaMemberSignature:
					got = append(got, provider.ThinkingDelta{Signature: rc.Value})
				case *types.ReasoningContentBlockDeltaMemberRedactedContent:
					got = append(got, provider.ThinkingDelta{Signature: redactedPrefix + base64.StdEncoding.EncodeToString(rc.Value)})
				}
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			finish = &provider.Finish{Reason: string(v.Value.StopReason)}
		case *types.ConverseStreamOutputMemberMetadata:
			if u := v.Value.Usage; u != nil {
				pu := provider.Usage{PromptTokens: int(aws.ToInt32(u.InputTokens)), CompletionTokens: int(aws.ToInt32(u.OutputTokens))}
				if u.CacheReadInputTokens != nil {
					c := int(*u.CacheReadInputTokens)
					pu.CachedTokens = &c
					pu.PromptTokens += c
				}
				usage = &pu
			}
		}
	}
	if err := stream.Err(); err != nil {
		return append(got, provider.Error{Err: sdkFailure(err)})
	}
	for _, i := range order {
		tl := tools[i]
		got = append(got, provider.ToolCallPart{Call: provider.ToolCall{ID: tl.id, Name: tl.name, Args: json.RawMessage(tl.input.String())}})
	}
	if usage != nil {
		got = append(got, *usage)
	}
	if finish != nil {
		got = append(got, *finish)
	}
	return got
}

// TestPeersInvokeStream: AWS's client reads every chunk InvokeEncoder
// wrote, and the Anthropic events in their bytes fold into the reply they
// encode; an exception reaches it with its type and message.
func TestPeersInvokeStream(t *testing.T) {
	srv := newPeerServer(t)
	sdk := sdkClient(srv)
	body, err := invokeBody(provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		r := codectest.Draw(t, codectest.Wire{Signatures: true, Finishes: []string{"end_turn", "tool_use", "max_tokens"}})
		e := NewInvokeEncoder("msg_bdrk_1", "claude", r.Usage)
		e.ArgChunk = rapid.IntRange(0, 8).Draw(t, "arg chunk")
		srv.serve(codectest.Encode(e, r.Parts))
		got := sdkRead(t, func(ctx context.Context) []provider.Part {
			out, err := sdk.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{
				ModelId: aws.String("us.anthropic.claude-haiku-4-5-20251001-v1:0"), Body: body, ContentType: aws.String("application/json")})
			if err != nil {
				t.Fatalf("InvokeModelWithResponseStream: %v", err)
			}
			stream := out.GetStream()
			defer stream.Close()
			dec := anthropic.NewEventReader()
			var got []provider.Part
			collect := func(p provider.Part) bool { got = append(got, p); return true }
			for ev := range stream.Events() {
				c, ok := ev.(*types.ResponseStreamMemberChunk)
				if !ok {
					continue
				}
				dec.Event(sse.Event{Type: "message", Data: string(c.Value.Bytes)}, collect)
			}
			if err := stream.Err(); err != nil {
				got = append(got, provider.Error{Err: sdkFailure(err)})
			}
			return got
		})
		if !reflect.DeepEqual(got, r.Want) {
			t.Fatalf("AWS's client read\n%#v\nwant\n%#v\n(error %v, want %v)", got, r.Want, errorOf(got), errorOf(r.Want))
		}
	})
}

// TestPeersRequest: AWS's client's ConverseStream request for a
// conversation goes to the path this client uses, reads back as what it
// asked, and is, as JSON, the body this client writes for the same
// conversation.
func TestPeersRequest(t *testing.T) {
	srv := newPeerServer(t)
	srv.serve([]byte(okReply))
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	out, err := sdkClient(srv).ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String("us.amazon.nova-micro-v1:0"),
		System:  []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}},
		Messages: []types.Message{
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Weather in Paris?"}}},
			{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{
				&types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{Value: types.ReasoningTextBlock{Text: aws.String("Need it."), Signature: aws.String("SIG")}}},
				&types.ContentBlockMemberText{Value: "Checking."},
				&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("tooluse_1"), Name: aws.String("get_weather"),
					Input: document.NewLazyDocument(map[string]any{"city": "Paris"})}},
			}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{
				&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String("tooluse_1"), Status: types.ToolResultStatusError,
					Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "18C"}}}},
			}},
		},
		ToolConfig: &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name: aws.String("get_weather"), Description: aws.String("Weather by city"),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)}}}}},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(100)},
	})
	if err != nil {
		t.Fatal(err)
	}
	out.GetStream().Close()
	req, sdkBody := srv.last()
	if want := Path(APIConverse, "us.amazon.nova-micro-v1:0"); req.URL.EscapedPath() != want {
		t.Errorf("AWS's client posts to %s, this client to %s", req.URL.EscapedPath(), want)
	}
	call, err := ReadRequest(req.URL.EscapedPath(), sdkBody)
	if err != nil {
		t.Fatal(err)
	}
	if call.Model != "us.amazon.nova-micro-v1:0" || call.UserText != "Weather in Paris?" || len(call.Tools) != 1 || call.Tools[0].Name != "get_weather" ||
		!reflect.DeepEqual(call.Results, []Result{{Name: "get_weather", OK: false, Output: "18C"}}) {
		t.Errorf("AWS's request reads as %+v", call)
	}
	ours, err := converseBody(provider.Request{System: "Be brief.", Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "Weather in Paris?"},
		{Role: provider.RoleAssistant, Text: "Checking.", Thinking: []provider.Thinking{{Text: "Need it.", Signature: "SIG"}},
			ToolCalls: []provider.ToolCall{{ID: "tooluse_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: provider.RoleTool, CallID: "tooluse_1", Text: "18C", IsError: true},
	}, Tools: []provider.ToolSpec{{Name: "get_weather", Description: "Weather by city", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(ours, &a)
	json.Unmarshal(sdkBody, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("bodies differ\n ours %s\n AWS  %s", ours, sdkBody)
	}
}

// sdkSign signs with AWS's signer: method, the URL as sent, the given
// headers (no Content-Length, which package sigv4 never signs), the
// payload's hash.
func sdkSign(t interface{ Fatal(...any) }, method, rawURL string, h http.Header, payload []byte, creds sigv4.Credentials, region, service string, at time.Time) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	r := &http.Request{Method: method, URL: u, Host: u.Host, Header: h.Clone()}
	sum := sha256.Sum256(payload)
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken},
		r, hex.EncodeToString(sum[:]), service, region, at)
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Get("Authorization")
}

// TestPeersSigV4: AWS's signer and package sigv4 sign random requests
// (model ids of any bytes in the path, queries, headers with odd spacing,
// bodies, with and without a session token) alike.
func TestPeersSigV4(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		model := rapid.StringN(1, 30, -1).Draw(t, "model")
		path := "/model/" + sigv4.EscapeLabel(model) + "/" + rapid.SampledFrom([]string{"converse-stream", "invoke-with-response-stream", "converse"}).Draw(t, "op")
		q := url.Values{}
		for range rapid.IntRange(0, 3).Draw(t, "query params") {
			q.Add(rapid.StringMatching(`[A-Za-z0-9 _.~-]{1,8}`).Draw(t, "key"), rapid.StringN(0, 8, -1).Draw(t, "value"))
		}
		rawURL := "https://" + rapid.SampledFrom([]string{"bedrock-runtime.us-east-1.amazonaws.com", "127.0.0.1:8443"}).Draw(t, "host") + path
		if len(q) > 0 {
			rawURL += "?" + q.Encode()
		}
		h := http.Header{"Content-Type": {"application/json"}}
		for range rapid.IntRange(0, 3).Draw(t, "headers") {
			h.Add(rapid.StringMatching(`X-[A-Za-z]{1,8}`).Draw(t, "name"), rapid.StringMatching(`[ a-zA-Z0-9,;=]{0,16}`).Draw(t, "value"))
		}
		creds := sigv4.Credentials{AccessKeyID: "AKID", SecretAccessKey: rapid.StringMatching(`[A-Za-z0-9/+]{20,40}`).Draw(t, "secret")}
		if rapid.Bool().Draw(t, "token") {
			creds.SessionToken = rapid.StringMatching(`[A-Za-z0-9/+=]{10,60}`).Draw(t, "session token")
		}
		payload := []byte(rapid.StringN(0, 64, -1).Draw(t, "payload"))
		at := time.Unix(rapid.Int64Range(1e9, 3e9).Draw(t, "time"), 0).UTC()
		u, _ := url.Parse(rawURL)
		mine := h.Clone()
		sigv4.Sign(sigv4.Request{Method: "POST", Host: u.Host, Path: u.EscapedPath(), Query: u.RawQuery, Header: mine, Payload: payload}, creds, "us-east-1", "bedrock", at)
		theirs := h.Clone()
		theirs.Set("X-Amz-Date", at.Format("20060102T150405Z"))
		if creds.SessionToken != "" {
			theirs.Set("X-Amz-Security-Token", creds.SessionToken)
		}
		if got, want := mine.Get("Authorization"), sdkSign(t, "POST", rawURL, theirs, payload, creds, "us-east-1", "bedrock", at); got != want {
			t.Fatalf("%s\n sigv4 %s\n AWS   %s", rawURL, got, want)
		}
	})
}

// TestPeersClientSignature: what this client sends is signed as AWS's
// signer signs the same request, as the server received it.
func TestPeersClientSignature(t *testing.T) {
	srv := newPeerServer(t)
	srv.serve([]byte(okReply))
	c, err := New(Config{BaseURL: srv.URL, Region: "us-west-2", Model: "us.amazon.nova-micro-v1:0", Credentials: testCreds, HTTP: &httpx.Client{Clock: clock.NewFake(epoch)}})
	if err != nil {
		t.Fatal(err)
	}
	collectParts(c)
	r, body := srv.last()
	h := http.Header{}
	for _, k := range []string{"Accept", "Content-Type", "X-Amz-Date", "X-Amz-Security-Token"} {
		h[k] = r.Header.Values(k)
	}
	want := sdkSign(t, r.Method, "http://"+r.Host+r.URL.RequestURI(), h, body, testCreds, "us-west-2", "bedrock", epoch)
	if got := r.Header.Get("Authorization"); got != want {
		t.Fatalf("sent %s\nAWS   %s", got, want)
	}
	if !bytes.Contains([]byte(r.URL.RequestURI()), []byte("%3A")) {
		t.Fatalf("the path %s is not escaped as AWS's", r.URL.RequestURI())
	}
}
