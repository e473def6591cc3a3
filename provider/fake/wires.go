package fake

import (
	"fmt"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/openai"
	"github.com/openmax/openmax/provider/openai/responses"
	"github.com/openmax/openmax/provider/script"
)

// codec is what the fake needs of a vendor wire. Each field is a call or
// two into the vendor package, which owns the wire; serving another wire
// is one more entry in codecs.
type codec struct {
	// paths are the request paths routed to the wire (POST only).
	paths []string
	// stream is the encoder of reply n's event stream.
	stream func(n int, model string, steps []script.Step) streamer
	// whole renders reply n as one complete response; ok is false when the
	// parts carry no finish.
	whole func(n int, model string, parts []provider.Part) (body []byte, ok bool)
	// errorBody is the wire's error JSON for status; empty code and
	// message take the wire's usual ones.
	errorBody func(status int, code, message string) []byte
	// impliedFinish says a finish reason the scenario shorthand implied
	// (stop, tool_calls) the way the wire does.
	impliedFinish func(reason string) string
}

var codecs = map[string]codec{
	WireOpenAI: {
		paths: []string{"/v1" + openai.Path, openai.Path},
		stream: func(n int, model string, _ []script.Step) streamer {
			return openai.NewEncoder(fmt.Sprintf("chatcmpl-fake-%d", n), model, Created)
		},
		whole: func(n int, model string, parts []provider.Part) ([]byte, bool) {
			return openai.Completion(fmt.Sprintf("chatcmpl-fake-%d", n), model, Created, parts)
		},
		errorBody:     openai.HTTPErrorBody,
		impliedFinish: func(r string) string { return r },
	},
	WireAnthropic: {
		paths: []string{anthropic.Path},
		stream: func(n int, model string, steps []script.Step) streamer {
			// The wire carries the usage at its start: the reply's last
			// usage step, wherever it stands.
			var usage *provider.Usage
			for _, s := range steps {
				if u, ok := s.Part.(provider.Usage); ok {
					usage = &u
				}
			}
			return anthropic.NewEncoder(fmt.Sprintf("msg_fake_%d", n), model, usage)
		},
		whole: func(n int, model string, parts []provider.Part) ([]byte, bool) {
			return anthropic.Message(fmt.Sprintf("msg_fake_%d", n), model, parts)
		},
		errorBody:     anthropic.HTTPErrorBody,
		impliedFinish: anthropic.StopReason,
	},
	WireResponses: {
		paths: []string{"/v1" + responses.Path, responses.Path},
		stream: func(n int, model string, _ []script.Step) streamer {
			return responses.NewEncoder(fmt.Sprintf("resp_fake_%d", n), model, Created)
		},
		whole: func(n int, model string, parts []provider.Part) ([]byte, bool) {
			return responses.Whole(fmt.Sprintf("resp_fake_%d", n), model, Created, parts)
		},
		errorBody: responses.HTTPErrorBody,
		// The wire has no finish reasons: a finish is completed, or
		// incomplete for length, max_output_tokens and content_filter.
		impliedFinish: func(r string) string { return r },
	},
}

// codecOf is the codec of a wire; a request no route matched gets
// OpenAI's error bodies.
func codecOf(wire string) codec {
	if c, ok := codecs[wire]; ok {
		return c
	}
	return codecs[WireOpenAI]
}

// streamer renders the parts of one reply as the SSE events of a wire: an
// openai.Encoder, an anthropic.Encoder or a responses.Encoder.
type streamer interface {
	// Open is the event(s) that start the stream.
	Open() []byte
	// Part renders one part; an Error part ends the stream.
	Part(p provider.Part) []byte
	// Close is what ends a stream whose steps ran out: the terminator when
	// the reply finished, nothing otherwise (the stream just stops).
	Close() []byte
}
