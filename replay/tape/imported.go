package tape

// Replaying the sessions made up for imported recordings honestly. For
// such a session (served in order) Replay adds two things the recording
// needs to end as it did:
//
//   - A rejection recorded from an endpoint the harness has no client for
//     (a vendor refusing a request to another of its endpoints; the three
//     wires the harness speaks are replayed by their own clients) answers
//     the harness's request in its place: an error body is the same object on
//     every endpoint of the vendor, so the engine sees the rejection the
//     recording's client saw (see importer.Session).
//   - When the last recorded reply asks for tools, nothing recorded what
//     they returned and no further reply exists. Running them would invent
//     a result (a stand-in failure) and a next request the recording never
//     made (ending in max_iterations). Instead the calls are shown but not
//     dispatched (provider.UnrunCall: tool_start, and a tool_end saying
//     they were not run, kept out of the transcript): the turn ends there
//     with the stop reason the provider recorded (tool_calls, tool_use),
//     which the wire passes through verbatim, and the log names the calls.

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/replay"
)

// servingTransport is a transport serving a cassette that tells which
// interactions it has not served yet (*replay.Replayer).
type servingTransport interface {
	http.RoundTripper
	Unused() []int
}

var _ servingTransport = (*replay.Replayer)(nil)

// rejectionRouter hands the replayer the harness's request under the
// path of the next recorded interaction when that interaction is an HTTP
// error recorded from another endpoint (same method).
type rejectionRouter struct {
	rp  servingTransport
	f   *cassette.File
	log io.Writer
}

func (r *rejectionRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	unused := r.rp.Unused()
	if len(unused) == 0 || req.URL == nil {
		return r.rp.RoundTrip(req)
	}
	k := unused[0]
	rec := r.f.Interactions[k]
	u, err := url.Parse(rec.Request.URL)
	if err != nil || rec.Response.Code < 400 || !strings.EqualFold(rec.Request.Method, req.Method) || u.EscapedPath() == req.URL.EscapedPath() {
		return r.rp.RoundTrip(req)
	}
	fmt.Fprintf(r.log, "openmax replay: interaction %d, the vendor's rejection (HTTP %d) of a request to %s, answers the harness's request to %s\n",
		k, rec.Response.Code, u.Path, req.URL.Path)
	out := req.Clone(req.Context())
	out.URL.Path, out.URL.RawPath = u.Path, u.RawPath
	return r.rp.RoundTrip(out)
}

// recordingEnd holds back the tool calls of a reply until its end, and
// turns them into calls shown but not run (provider.UnrunCall) when the
// reply completed and the recording has nothing left to serve: the
// recording ends at those calls.
type recordingEnd struct {
	next provider.Provider
	rp   servingTransport
	log  io.Writer
}

func (p *recordingEnd) Stream(ctx context.Context, req provider.Request) iter.Seq[provider.Part] {
	return func(yield func(provider.Part) bool) {
		var held []provider.Part
		flush := func() bool {
			for _, c := range held {
				if !yield(c) {
					return false
				}
			}
			held = nil
			return true
		}
		for part := range p.next.Stream(ctx, req) {
			switch pt := part.(type) {
			case provider.ToolCallPart:
				held = append(held, part)
				continue
			case provider.Retry:
				held = nil // the attempt's calls are void, as the engine has it
			case provider.Finish:
				if len(held) > 0 && len(p.rp.Unused()) == 0 {
					var names []string
					for _, c := range held {
						call := c.(provider.ToolCallPart).Call
						names = append(names, fmt.Sprintf("%s (%s)", call.Name, call.ID))
					}
					fmt.Fprintf(p.log, "openmax replay: the recording ends at the model's call to %s with nothing recorded after it: shown, not run, the turn ends with the recorded stop reason %q\n",
						strings.Join(names, ", "), pt.Reason)
					for i, c := range held {
						held[i] = provider.UnrunCall{Call: c.(provider.ToolCallPart).Call, Reason: "the recording ends at this call; nothing recorded its result"}
					}
				}
				if !flush() {
					return
				}
			case provider.Error:
				if !flush() {
					return
				}
			}
			if !yield(part) {
				return
			}
		}
		flush() // no completion signal: the engine refuses the calls itself
	}
}
