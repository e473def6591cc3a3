// Package edit reads and rewrites openmax cassettes (package
// recorder/cassette): Show prints one as a readable timeline, Diff
// reviews what changed between two (diff.go), ToScript turns one into a
// fake-provider scenario (toscript.go), and Inject derives a new cassette
// with a fault added, so a scenario that was never recorded (a 429 before
// the third request, a reset 400 bytes into a stream) can be replayed
// through the real engine.
//
// # Faults
//
// Inject never modifies its input: it deep-copies the cassette (Clone) and
// edits the copy. Every interaction it produces keeps Response.Body equal
// to its chunks concatenated, so the result passes cassette.Parse, and an
// interaction it touches carries the response header X-Openmax-Injected
// naming the op (Op.String), so the edit stays visible in the file and in
// Show. The kinds:
//
//   - "429" and "5xx" insert a new interaction before interaction Before.
//     Its request is a copy of that interaction's request, so a replay
//     matches the same live request to it first (identical requests are
//     served in recorded order) and the original interaction then serves
//     the client's retry. The response is the status with the error the
//     interaction's wire answers it with (codec.Wire.HTTPError, with the
//     vendor's message for the status): Anthropic's {"type":"error",
//     "error":{"type","message"}} on the Messages wire, OpenAI's
//     {"error":{"message","type","param","code"}} on Chat Completions and
//     the Responses API. Its headers are Content-Type application/json,
//     Content-Length, any header the wire's errors carry, the Date of the
//     original response when it had one, and Retry-After / Retry-After-Ms
//     when the op gives them (verbatim). It starts when the original did,
//     as one chunk at offset 0.
//   - "truncate" keeps the first Chunk chunks of interaction Interaction's
//     body and ends it cleanly: no terminal error, and no completion
//     signal unless the kept chunks hold one (a recorded chunk can hold
//     several events; cut with reset to split one).
//   - "reset" keeps the first Byte bytes of the body, splitting the chunk
//     that straddles the cut (the kept part arrives when the chunk did),
//     then ends it with a recorded reset, which a replay serves as a read
//     error wrapping ECONNRESET. It happens when the first dropped byte
//     would have arrived (when the recorded end did, for a cut at the very
//     end).
//   - "stream_error" replaces chunk Chunk with an in-stream error event of
//     the interaction's wire (codec.Wire.StreamFailure for Code, then
//     codec.Wire.ErrorEvent), arriving when that chunk did, and drops the
//     rest: OpenAI's data: {"error":{...,"type":"server_error"}} or
//     Anthropic's event: error {"type":"error","error":{"type":
//     "overloaded_error","message":"Overloaded"}}; on an OpenAI Responses
//     stream, a response.failed event naming the stream's response, numbered
//     after the events kept, whose error has code server_error. Code names
//     another code (rate_limit_exceeded, ...). When the kept chunks end
//     in the middle of an event, the rest of that event is kept in front
//     of the error event so that it parses as an event of its own. Only an
//     event stream (as its wire reads the body) takes it.
//
// The wire of an interaction is the registry's answer (provider/codec:
// ForRecording, from the request, else from the recorded body). An op
// that writes the wire's bytes or cuts by its events refuses an
// interaction no wire claims (the error wraps codec.ErrUnknownWire); the
// cuts by chunk and byte need no wire.
//
// Chunk and Byte count what the replay serves: the recorded chunks, or a
// body recorded without chunk detail (a stock go-vcr cassette) as a single
// chunk. For a clean end the Content-Length header, when there is one, is
// made to fit the new body; a reset keeps it, as a server that promised
// more would.
//
// Indices refer to the cassette Inject is given: to apply several ops,
// inject them one after another, counting an inserted error interaction
// in the indices of the later ops.
//
// # Session
//
// The recorded harness session (client commands, seed, flags, tool
// results) is copied unchanged: the client's recorded commands still apply
// to the edited cassette. Each command is anchored to a protocol point (its
// turn, and the line of that turn it followed), so a fault that adds lines
// (retry notices) or ends a turn early moves the commands with the
// conversation: a command sent between turns still lands between the same
// turns, and every recorded turn still runs.
package edit

import (
	"github.com/openmax/openmax/recorder/cassette"
)

// InjectedHeader is the response header Inject adds to every interaction
// it inserts or changes; its value is the op, in ParseOp's syntax.
const InjectedHeader = "X-Openmax-Injected"

// Clone returns a deep copy of f: nothing in the copy shares memory with
// f, so either can be changed without the other noticing.
func Clone(f *cassette.File) *cassette.File {
	if f == nil {
		return nil
	}
	out := &cassette.File{Version: f.Version}
	if f.Interactions != nil {
		out.Interactions = make([]*cassette.Interaction, len(f.Interactions))
		for i, it := range f.Interactions {
			out.Interactions[i] = it.Clone()
		}
	}
	out.Session = f.Session.Clone()
	return out
}
