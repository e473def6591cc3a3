package bedrock

import (
	"encoding/json"
	"fmt"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
	"github.com/openmax/openmax/provider/internal/wireread"
	"github.com/openmax/openmax/provider/sse"
)

// The InvokeModelWithResponseStream wire: the request body is an
// Anthropic Messages request without model or stream, with
// anthropic_version; every frame of the reply is a chunk event whose
// payload carries one Anthropic stream event, base64, in bytes.

// Chunk is the payload of a chunk event. P is random padding.
type Chunk struct {
	Bytes []byte `json:"bytes"`
	P     string `json:"p,omitempty"`
}

// invokeBody encodes req as an Anthropic body for Bedrock.
func invokeBody(req provider.Request, maxTokens int) ([]byte, error) {
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	return anthropic.EncodeRequest(req, anthropic.RequestOptions{MaxTokens: maxTokens, Version: AnthropicVersion})
}

// innerType is the type of an Anthropic event's JSON, "" when it has none.
func innerType(data []byte) string {
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &t)
	return t.Type
}

// chunkEvent is the Anthropic event a chunk message carries.
func chunkEvent(m eventstream.Message) ([]byte, error) {
	var c Chunk
	if err := json.Unmarshal(m.Payload, &c); err != nil {
		return nil, fmt.Errorf("bedrock: malformed chunk event: %v", err)
	}
	return c.Bytes, nil
}

// invokeState folds the frames of an InvokeModelWithResponseStream
// reply: each chunk's Anthropic event goes through anthropic's Decoder,
// so the reply completes at message_stop, as on Anthropic's own API.
type invokeState struct {
	dec  wireread.Client
	n    int    // Anthropic events
	last string // the last one's type
}

func newInvokeState() *invokeState { return &invokeState{dec: anthropic.NewEventReader()} }

// message folds one message into the reply: the parts the client yields
// for it (an Error part for a failure), and whether the reply is over.
func (st *invokeState) message(m eventstream.Message) ([]provider.Part, bool) {
	if se := exceptionError(m); se != nil {
		return []provider.Part{provider.Error{Err: se}}, true
	}
	if m.String(":event-type") != "chunk" {
		return nil, false // an event Bedrock adds later
	}
	data, err := chunkEvent(m)
	if err != nil {
		return []provider.Part{provider.Error{Err: err}}, true
	}
	st.n++
	st.last = innerType(data)
	var parts []provider.Part
	more := st.dec.Event(sse.Event{Type: "message", Data: string(data)}, func(p provider.Part) bool {
		parts = append(parts, p)
		return true
	})
	return parts, !more
}

// end is what the client yields when the stream ends or breaks with err
// before message_stop: an incomplete reply (or a malformed one).
func (st *invokeState) end(err error) []provider.Part {
	return []provider.Part{provider.Error{Err: readFailure(err, "message_stop", st.n, st.last)}}
}
