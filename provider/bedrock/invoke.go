package bedrock

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/anthropic"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
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

// invokeStream parses the event stream of an InvokeModelWithResponseStream
// reply: each chunk's Anthropic event goes through anthropic's Decoder,
// so the reply completes at message_stop, as on Anthropic's own API.
func invokeStream(ctx context.Context, body io.Reader, yield func(provider.Part) bool) {
	dec := anthropic.NewDecoder()
	es := eventstream.NewDecoder(body)
	n, last := 0, ""
	for {
		if ctx.Err() != nil {
			return
		}
		m, err := es.Next()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			yield(provider.Error{Err: readFailure(err, "message_stop", n, last)})
			return
		}
		if se := exceptionError(m); se != nil {
			yield(provider.Error{Err: se})
			return
		}
		if m.String(":event-type") != "chunk" {
			continue // an event Bedrock adds later
		}
		data, err := chunkEvent(m)
		if err != nil {
			yield(provider.Error{Err: err})
			return
		}
		n++
		last = innerType(data)
		parts, done, err := dec.Event("", data)
		for _, p := range parts {
			if !yield(p) {
				return
			}
		}
		if err != nil {
			yield(provider.Error{Err: err})
			return
		}
		if done {
			return
		}
	}
}
