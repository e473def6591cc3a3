//go:build sdkpeers

package replay_test

// Peer tests of the Bedrock wires with AWS's own Go client
// (aws-sdk-go-v2 bedrockruntime): against the fake provider serving a
// scenario, what the SDK reads is what our client reads; recorded through
// the recorder, the cassette replayed to the SDK gives it the same reply
// again, byte for byte the recorded event stream.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/bedrock"
	"github.com/openmax/openmax/provider/bedrock/sigv4"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/provider/sse"
	"github.com/openmax/openmax/recorder"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

const bedrockModel = "us.anthropic.claude-haiku-4-5-20251001-v1:0"

var bedrockCreds = sigv4.Credentials{AccessKeyID: "AKIDPEERTEST0001", SecretAccessKey: "peer-secret-0123456789"}

// bedrockReply is a reply as a client reconstructs it.
type bedrockReply struct {
	Text   string
	Calls  []string // id name args
	Usage  [2]int
	Finish string
	// Err is the failure's type and message.
	Err string
}

func bedrockSDK(base string, hc *http.Client) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(base), HTTPClient: hc,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: bedrockCreds.AccessKeyID, SecretAccessKey: bedrockCreds.SecretAccessKey}, nil
		}),
		Retryer: aws.NopRetryer{},
	})
}

func sdkErr(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return err.Error()
}

// viaSDK streams one reply of api with AWS's client.
func viaSDK(t *testing.T, api bedrock.API, base string, hc *http.Client) bedrockReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sdk := bedrockSDK(base, hc)
	var r bedrockReply
	if api == bedrock.APIInvoke {
		body := []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)
		out, err := sdk.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{
			ModelId: aws.String(bedrockModel), Body: body, ContentType: aws.String("application/json")})
		if err != nil {
			r.Err = sdkErr(err)
			return r
		}
		stream := out.GetStream()
		defer stream.Close()
		var parts []provider.Part
		dec := anthropic.NewEventReader()
		for ev := range stream.Events() {
			if c, ok := ev.(*types.ResponseStreamMemberChunk); ok {
				dec.Event(sse.Event{Type: "message", Data: string(c.Value.Bytes)}, func(p provider.Part) bool {
					parts = append(parts, p)
					return true
				})
			}
		}
		r = fold(t, parts)
		if err := stream.Err(); err != nil {
			r.Err = sdkErr(err)
		}
		return r
	}
	out, err := sdk.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String(bedrockModel),
		Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}})
	if err != nil {
		r.Err = sdkErr(err)
		return r
	}
	stream := out.GetStream()
	defer stream.Close()
	calls := map[int32]*[3]string{}
	var order []int32
	for ev := range stream.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				i := aws.ToInt32(v.Value.ContentBlockIndex)
				calls[i] = &[3]string{aws.ToString(tu.Value.ToolUseId), aws.ToString(tu.Value.Name)}
				order = append(order, i)
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			switch d := v.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				r.Text += d.Value
			case *types.ContentBlockDeltaMemberToolUse:
				calls[aws.ToInt32(v.Value.ContentBlockIndex)][2] += aws.ToString(d.Value.Input)
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			r.Finish = string(v.Value.StopReason)
		case *types.ConverseStreamOutputMemberMetadata:
			if u := v.Value.Usage; u != nil {
				r.Usage = [2]int{int(aws.ToInt32(u.InputTokens)), int(aws.ToInt32(u.OutputTokens))}
			}
		}
	}
	for _, i := range order {
		c := calls[i]
		r.Calls = append(r.Calls, c[0]+" "+c[1]+" "+canon(t, c[2]))
	}
	if err := stream.Err(); err != nil {
		r.Err = sdkErr(err)
	}
	return r
}

func canon(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("tool input %q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// fold reconstructs a reply from a client's parts.
func fold(t *testing.T, parts []provider.Part) bedrockReply {
	var r bedrockReply
	for _, part := range parts {
		switch p := part.(type) {
		case provider.TextDelta:
			r.Text += p.Text
		case provider.ToolCallPart:
			r.Calls = append(r.Calls, p.Call.ID+" "+p.Call.Name+" "+canon(t, string(p.Call.Args)))
		case provider.Usage:
			r.Usage = [2]int{p.PromptTokens, p.CompletionTokens}
		case provider.Finish:
			r.Finish = p.Reason
		case provider.Error:
			var he *provider.HTTPError
			if errors.As(p.Err, &he) {
				r.Err = he.Code + ": " + he.Message
				continue
			}
			se := provider.StreamErrorOf(p.Err)
			r.Err = se.Type + ": " + se.Message
		}
	}
	return r
}

// viaOurs streams one reply of api with our client.
func viaOurs(t *testing.T, api bedrock.API, base string) bedrockReply {
	t.Helper()
	c, err := bedrock.New(bedrock.Config{API: api, BaseURL: base, Model: bedrockModel, Credentials: bedrockCreds,
		HTTP: &httpx.Client{HTTP: &http.Client{Transport: &http.Transport{}}, Clock: clock.NewFake(time.Unix(fake.Created, 0))}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var parts []provider.Part
	for p := range c.Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}) {
		parts = append(parts, p)
	}
	return fold(t, parts)
}

// sdkRetrying is viaSDK against what setup gives (done runs after the
// read), set up afresh and read again when AWS's client lost its own
// connection mid-stream ("use of closed network connection": a race
// inside the SDK, seen once in 800 reads under -race, which
// provider/bedrock's peers meet too), at most three times.
func sdkRetrying(t *testing.T, api bedrock.API, setup func() (base string, hc *http.Client, done func())) bedrockReply {
	t.Helper()
	for i := 0; ; i++ {
		base, hc, done := setup()
		r := viaSDK(t, api, base, hc)
		done()
		if i == 2 || !strings.Contains(r.Err, "use of closed network connection") {
			return r
		}
		t.Logf("AWS's client lost its connection (%s); reading again", r.Err)
	}
}

func serveScenario(t *testing.T, yaml string) string {
	t.Helper()
	sc, err := script.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	srv := fake.New(sc, fake.Options{Clock: clock.NewFake(time.Unix(fake.Created, 0))})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return base
}

// TestPeersBedrock: for each operation and scenario, AWS's client reads
// from the fake provider what our client reads; then, recorded through
// the recorder and replayed from the cassette, the same reply again.
func TestPeersBedrock(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       bedrockReply
	}{
		{"plain", `replies:
  - text: "Hello from the fake Bedrock."
    usage: {prompt_tokens: 11, completion_tokens: 6}
`, bedrockReply{Text: "Hello from the fake Bedrock.", Usage: [2]int{11, 6}, Finish: "end_turn"}},
		{"tool call", `replies:
  - text: "Checking."
    tool_calls:
      - {id: tooluse_1, name: read_file, args: {path: a.txt, opts: {lines: [1, 2]}}}
    usage: {prompt_tokens: 20, completion_tokens: 9}
`, bedrockReply{Text: "Checking.", Calls: []string{`tooluse_1 read_file {"opts":{"lines":[1,2]},"path":"a.txt"}`}, Usage: [2]int{20, 9}, Finish: "tool_use"}},
		{"throttlingException in the stream", `replies:
  - chunks:
      - text: "Part"
      - stream_error: {type: throttlingException, message: "Too many requests, please wait before trying again."}
`, bedrockReply{Text: "Part", Err: "throttlingException: Too many requests, please wait before trying again."}},
		{"HTTP 429", `replies:
  - status: 429
    message: "Too many requests, please wait before trying again."
`, bedrockReply{Err: "ThrottlingException: Too many requests, please wait before trying again."}},
	}
	for _, api := range []bedrock.API{bedrock.APIConverse, bedrock.APIInvoke} {
		for _, tt := range tests {
			t.Run(string(api)+"/"+tt.name, func(t *testing.T) {
				want := tt.want
				ours := viaOurs(t, api, serveScenario(t, tt.yaml))
				theirs := sdkRetrying(t, api, func() (string, *http.Client, func()) {
					return serveScenario(t, tt.yaml), &http.Client{Transport: &http.Transport{}}, func() {}
				})
				// AWS's client names an in-stream exception by its
				// shape (ThrottlingException), the frame by its event
				// type (throttlingException).
				for _, r := range []*bedrockReply{&ours, &theirs} {
					if strings.EqualFold(r.Err, want.Err) {
						r.Err = want.Err
					}
				}
				if !reflect.DeepEqual(ours, want) || !reflect.DeepEqual(theirs, want) {
					t.Fatalf("our client read %+v\nAWS's client read %+v\nwant %+v", ours, theirs, want)
				}

				var path string
				live := sdkRetrying(t, api, func() (string, *http.Client, func()) {
					path = filepath.Join(t.TempDir(), "bedrock.yaml")
					rec, err := recorder.New(recorder.Options{Path: path})
					if err != nil {
						t.Fatal(err)
					}
					return serveScenario(t, tt.yaml), &http.Client{Transport: rec}, func() {
						if err := rec.Close(); err != nil {
							t.Fatal(err)
						}
					}
				})
				var rp *replay.Replayer
				replayed := sdkRetrying(t, api, func() (string, *http.Client, func()) {
					f, err := cassette.Load(path)
					if err != nil {
						t.Fatal(err)
					}
					rp = replay.New(f, replay.Options{Scrub: recorder.ScrubFunc(nil)})
					return "http://127.0.0.1:1", &http.Client{Transport: rp}, func() {}
				})
				for _, r := range []*bedrockReply{&live, &replayed} {
					if strings.EqualFold(r.Err, want.Err) {
						r.Err = want.Err // the casing, as above
					}
				}
				if !reflect.DeepEqual(live, theirs) || !reflect.DeepEqual(replayed, live) {
					t.Fatalf("recorded %+v\nreplayed %+v\nwant %+v", live, replayed, theirs)
				}
				if u := rp.Unused(); len(u) != 0 {
					t.Errorf("unused interactions %v", u)
				}
			})
		}
	}
}
