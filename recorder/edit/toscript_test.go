package edit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/fixture"
	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/clock"
	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/fake"
	"github.com/openmax/openmax/provider/script"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/importer"
	"github.com/openmax/openmax/recorder/replay"
)

// served is what a client received for one request.
type served struct {
	status int
	header http.Header
	body   []byte
	// end is how the body ended: clean, reset (ECONNRESET), eof (the
	// connection closed before the body's end), stalled (the server went
	// silent and the client gave up), or refused (no response at all).
	end string
}

// sendRecorded sends the recorded request of it to base and reads what comes
// back. A server that goes silent is given up on once the body read so
// far is enough (enough reports it) or after a minute.
func sendRecorded(t *testing.T, base string, it *cassette.Interaction, enough func([]byte) bool) served {
	t.Helper()
	u, err := url.Parse(it.Request.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, it.Request.Method, base+u.RequestURI(), strings.NewReader(it.Request.Body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range it.Request.Headers {
		switch strings.ToLower(k) {
		case "host", "content-length", "accept-encoding", "connection", "transfer-encoding":
			continue
		}
		req.Header[k] = vs
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		return served{end: "refused"}
	}
	defer resp.Body.Close()
	s := served{status: resp.StatusCode, header: resp.Header}
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		s.body = append(s.body, buf[:n]...)
		switch {
		case err == nil:
			if enough != nil && enough(s.body) {
				s.end = "stalled"
				return s
			}
			continue
		case err == io.EOF:
			s.end = "clean"
		case errors.Is(err, syscall.ECONNRESET):
			s.end = "reset"
		case errors.Is(err, io.ErrUnexpectedEOF):
			s.end = "eof"
		case ctx.Err() != nil:
			t.Fatalf("%s %s: no end after a minute (%d B read)", it.Request.Method, u.Path, len(s.body))
		default:
			s.end = "error: " + err.Error()
		}
		return s
	}
}

// clientView is what the vendor's client makes of a body, as its wire
// reads it: the parts in order (each text and thinking delta, signature,
// tool call, the last usage, finish, error), and what the reply says.
// Not in it: the reply's ids, model and timestamps, which the script does
// not carry (the fake derives its own from the request number), and the
// byte length of an event a reset cut in the middle.
type clientView struct {
	Parts                              []string
	Text, Thinking, Refusal, Finish    string
	Signatures                         int
	Tools                              []codec.ToolCall
	Usage                              *codec.Usage
	Errors                             []string
	Signal                             bool
	Stream                             bool
	Unparsed                           int
	ReasoningSummaries, ReasoningTexts []string
}

func viewOf(w codec.Wire, contentType string, body []byte) clientView {
	r := w.Parse(contentType, body)
	v := clientView{Text: r.Text, Thinking: r.Thinking, Refusal: r.Refusal, Finish: r.Finish, Signatures: r.Signatures,
		Usage: r.Usage, Errors: r.Errors, Signal: r.Signal != "", Stream: r.Stream, Unparsed: r.Unparsed()}
	for _, tc := range r.Tools {
		if strings.TrimSpace(tc.Args) == "" {
			tc.Args = "{}" // no input streamed: the call's input is the empty object
		}
		v.Tools = append(v.Tools, tc)
	}
	for _, ri := range r.Reasoning {
		v.ReasoningSummaries = append(v.ReasoningSummaries, strings.Join(ri.Summary, "\x00"))
		v.ReasoningTexts = append(v.ReasoningTexts, ri.Text)
	}
	var parts []provider.Part
	for _, ev := range r.Events {
		parts = append(parts, ev.Parts...)
	}
	parts = append(parts, r.EndParts...)
	last := -1
	for k, p := range parts {
		if _, ok := p.(provider.Usage); ok {
			last = k
		}
	}
	for k, p := range parts {
		switch p := p.(type) {
		case provider.Usage:
			if k == last {
				v.Parts = append(v.Parts, fmt.Sprintf("usage %+v", codec.Usage{Input: p.PromptTokens, Output: p.CompletionTokens}))
			}
		case provider.ToolCallPart:
			args := string(p.Call.Args)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			v.Parts = append(v.Parts, fmt.Sprintf("tool %s %s %s %s", p.Call.ID, p.Call.Namespace, p.Call.Name, args))
		case provider.Error:
			if errors.Is(p.Err, provider.ErrIncomplete) {
				v.Parts = append(v.Parts, "incomplete")
			} else {
				se := provider.StreamErrorOf(p.Err)
				v.Parts = append(v.Parts, fmt.Sprintf("error %s: %s", se.Type, se.Message))
			}
		default:
			v.Parts = append(v.Parts, fmt.Sprintf("%T %+v", p, p))
		}
	}
	return v
}

// libraryFiles are the library's recordings: cassettes/*.yaml, which
// openmax recorded from its own fake provider, and the real recordings of
// cassettes/real.
func libraryFiles(t *testing.T) (own, real []string) {
	t.Helper()
	own, _ = filepath.Glob(filepath.Join(fixture.Root(), "cassettes", "*.yaml"))
	for _, pat := range []string{"*.yaml", "*.httprr"} {
		m, _ := filepath.Glob(filepath.Join(fixture.RealDir(), pat))
		real = append(real, m...)
	}
	if len(own) < 30 || len(real) < 10 {
		t.Fatalf("the library has %d recordings of its own and %d real ones", len(own), len(real))
	}
	return own, real
}

// TestToScriptServesTheSameStream is the property of `cassette
// to-script` over the whole library: for every recording, each recorded
// request sent to the recording served by the replay handler (what
// `openmax fake-provider --cassette` serves, paced instantly: timing
// aside) and to the script made of it served by the fake provider (what
// `openmax fake-provider --scenario` serves) gets the same answer:
//
//   - the same status, the same values of the headers the script carries
//     (Content-Type and the ones that steer a client), and the same end
//     (clean, reset, the server going silent, or no response);
//   - for an error status or a body sent verbatim: the same bytes;
//   - for a recording of cassettes/ (openmax recorded each from its own
//     fake provider, one request per reply, so the ids and timestamps the
//     fake derives from the request number are the recorded ones): the
//     same bytes, but for a body a reset cut in the middle of an event (the
//     script carries parts, not the bytes of an event never finished);
//   - for every recording, the real ones too: the same reading by the
//     interaction's wire (clientView): the parts the vendor's client yields
//     in order, the text, thinking, signatures, tool calls, usage, finish,
//     errors and whether the completion signal came. Bytes cannot be equal
//     for a real vendor's body: its ids, timestamps, model name, the
//     members no client reads (system_fingerprint, obfuscation, ping
//     events) and the grouping of its events are the vendor's, and the
//     script says what the reply carries, not how a vendor spelled it.
func TestToScriptServesTheSameStream(t *testing.T) {
	own, real := libraryFiles(t)
	byteEqual := map[string]bool{}
	for _, f := range own {
		byteEqual[f] = true
	}
	for _, file := range append(own, real...) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, _, err := importer.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			sc, _, err := ToScript(f, ScriptOptions{NoDelays: true})
			if err != nil {
				t.Fatal(err)
			}
			data, err := MarshalScript(sc, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sc, err = script.Parse(data); err != nil { // serve what was written
				t.Fatal(err)
			}
			rec := httptest.NewServer(replay.NewHandler(f, replay.Options{Clock: clock.NewFake(time.Unix(0, 0))}))
			defer rec.Close()
			fk := fake.New(sc, fake.Options{Clock: clock.NewFake(time.Unix(fake.Created, 0))})
			base, err := fk.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer fk.Close()
			for i, it := range f.Interactions {
				reply := sc.Replies[i]
				stalls := len(reply.Chunks) > 0 && reply.Chunks[len(reply.Chunks)-1].Stall
				var w codec.Wire
				if it.Responded() {
					if w, err = wireOf(it); err != nil {
						t.Fatal(err)
					}
				}
				ct, _ := header(it.Response.Headers, "Content-Type")
				var recEnough, fakeEnough func([]byte) bool
				var want served
				// The replay handler goes silent where the recorded client gave
				// up (a cancel, a timeout): read what was recorded, then give up
				// too. The script stalls there too, unless the client had the
				// completion signal (or an error event) first, and hung up on a
				// reply that was whole: the fake then ends it cleanly, which is
				// all that client could tell.
				silent := it.Failure() != nil && (it.Failure().Kind == cassette.KindCancel || it.Failure().Kind == cassette.KindTimeout)
				if silent {
					recEnough = func(b []byte) bool { return len(b) >= len(it.Body()) }
				}
				if stalls {
					fakeEnough = func(b []byte) bool { return reflect.DeepEqual(viewOf(w, ct, b), viewOf(w, ct, want.body)) }
				}
				want = sendRecorded(t, rec.URL, it, recEnough)
				got := sendRecorded(t, base, it, fakeEnough)
				where := fmt.Sprintf("interaction %d (%s)", i, endpoint(it))
				if silent && !stalls && want.end == "stalled" && got.end == "clean" {
					got.end = want.end
				}
				if got.status != want.status || got.end != want.end {
					t.Fatalf("%s: the script served status %d ending %s, the recording %d ending %s\n%s", where, got.status, got.end, want.status, want.end, data)
				}
				for k := range reply.Headers {
					if g, r := got.header.Get(k), want.header.Get(k); g != r {
						t.Errorf("%s: header %s: the script served %q, the recording %q", where, k, g, r)
					}
				}
				verbatim := reply.Body != nil
				cut := it.Failure() != nil && w != nil && w.Parse(ct, []byte(it.Body())).Tail > 0
				if verbatim || (byteEqual[file] && !cut) {
					if !bytes.Equal(got.body, want.body) {
						t.Errorf("%s: the bodies differ (verbatim %v):\nscript:    %q\nrecording: %q", where, verbatim, got.body, want.body)
					}
				}
				if w == nil || want.end == "refused" {
					continue
				}
				gv, wv := viewOf(w, got.header.Get("Content-Type"), got.body), viewOf(w, want.header.Get("Content-Type"), want.body)
				if !reflect.DeepEqual(gv, wv) {
					t.Errorf("%s: the client reads the bodies differently: %s", where, viewDiff(gv, wv))
				}
			}
		})
	}
}

// viewDiff names the first difference of two views.
func viewDiff(got, want clientView) string {
	for k := 0; k < max(len(got.Parts), len(want.Parts)); k++ {
		var g, w string
		if k < len(got.Parts) {
			g = got.Parts[k]
		}
		if k < len(want.Parts) {
			w = want.Parts[k]
		}
		if g != w {
			return fmt.Sprintf("part %d: the script's %q, the recording's %q", k, g, w)
		}
	}
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for k := 0; k < gv.NumField(); k++ {
		if !reflect.DeepEqual(gv.Field(k).Interface(), wv.Field(k).Interface()) {
			return fmt.Sprintf("%s: the script's %+v, the recording's %+v", gv.Type().Field(k).Name, gv.Field(k).Interface(), wv.Field(k).Interface())
		}
	}
	return "none"
}

// TestToScriptDelays: the chunk timings of a recording become delays
// before the parts of the events that arrived later (the difference from
// the previous arrival), none with NoDelays, and a stall where the client
// gave up on a silent server.
func TestToScriptDelays(t *testing.T) {
	f, _, err := importer.Load(filepath.Join(fixture.Root(), "cassettes", "openai_plain.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	it := f.Interactions[0]
	body := it.Body()
	// One chunk per SSE event, arriving 0, 100ms, 300ms, 300ms, 1s after the request.
	var chunks []cassette.Chunk
	for k, ev := range strings.SplitAfter(body, "\n\n")[:5] {
		chunks = append(chunks, cassette.Chunk{At: []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, time.Second}[k], Data: ev})
	}
	it.Stream.Chunks = chunks
	for _, tt := range []struct {
		opts ScriptOptions
		want []string
	}{
		// OpenAI's client yields the usage and the finish once [DONE] came
		// (at 1s), so that is when the script sends them.
		{ScriptOptions{}, []string{`delay 100ms`, `text "Hello from the fake OpenAI."`, `delay 900ms`, `usage 11/6`, `finish "stop"`}},
		{ScriptOptions{NoDelays: true}, []string{`text "Hello from the fake OpenAI."`, `usage 11/6`, `finish "stop"`}},
	} {
		sc, _, err := ToScript(f, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range sc.Replies[0].Chunks {
			switch {
			case c.Delay > 0:
				got = append(got, "delay "+c.Delay.String())
			case c.Text != nil:
				got = append(got, "text "+quote(*c.Text))
			case c.Finish != nil:
				got = append(got, "finish "+quote(*c.Finish))
			case c.Usage != nil:
				got = append(got, fmt.Sprintf("usage %d/%d", c.Usage.PromptTokens, c.Usage.CompletionTokens))
			default:
				got = append(got, fmt.Sprintf("%+v", c))
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v: chunks %q, want %q", tt.opts, got, tt.want)
		}
	}
	// The client gave up after "Started" (a cancel at +30s): a stall.
	f, _, err = importer.Load(filepath.Join(fixture.Root(), "cassettes", "idle_stall_after_text.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc, _, err := ToScript(f, ScriptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := sc.Replies[0].Chunks; len(cs) != 2 || cs[0].Text == nil || *cs[0].Text != "Started" || !cs[1].Stall {
		t.Errorf("a cancelled stream: %+v", cs)
	}
}
