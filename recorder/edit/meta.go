package edit

import (
	"encoding/json"

	"github.com/openmax/openmax/provider/openai/responses"
)

// metaEvent is what any wire's event (or whole body) says about the
// message beside its content: its id and model (at the top, in an
// Anthropic message_start's message, or in a Responses event's response),
// its usage (Chat Completions' and Anthropic's; the Responses usage is
// read by responsesEvent), a signature's bytes (Anthropic's
// signature_delta) and a Responses message item's phase. Fields of the
// wrong type leave the event saying nothing here.
type metaEvent struct {
	ID       string     `json:"id"`
	Model    string     `json:"model"`
	Usage    *metaUsage `json:"usage"`
	Message  *metaEvent `json:"message"`
	Response *metaEvent `json:"response"`
	Delta    *struct {
		Type      string `json:"type"`
		Signature string `json:"signature"`
	} `json:"delta"`
	Item *struct {
		Type  string `json:"type"`
		Phase string `json:"phase"`
	} `json:"item"`
}

// metaUsage is a usage object of Chat Completions or Anthropic.
type metaUsage struct {
	PromptTokens        *int `json:"prompt_tokens"`
	CompletionTokens    *int `json:"completion_tokens"`
	InputTokens         *int `json:"input_tokens"`
	OutputTokens        *int `json:"output_tokens"`
	CacheRead           *int `json:"cache_read_input_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// meta reads what data says about the message (see metaEvent) into r.
func (r *reconstruction) meta(data string) {
	var ev metaEvent
	if json.Unmarshal([]byte(data), &ev) != nil {
		// A usage of the wrong type must not hide the id and model.
		ev = metaEvent{}
		var head struct {
			ID    string `json:"id"`
			Model string `json:"model"`
		}
		if json.Unmarshal([]byte(data), &head) != nil {
			return
		}
		ev.ID, ev.Model = head.ID, head.Model
	}
	for _, m := range []*metaEvent{&ev, ev.Message, ev.Response} {
		if m == nil {
			continue
		}
		if m.ID != "" && r.msgID == "" {
			r.msgID = m.ID
		}
		if m.Model != "" && r.model == "" {
			r.model = m.Model
		}
		if r.wire != wireResponses {
			r.addUsage(m.Usage)
		}
	}
	if d := ev.Delta; d != nil && d.Type == "signature_delta" {
		r.sigBytes = append(r.sigBytes, len(d.Signature))
	}
	if it := ev.Item; r.wire == wireResponses && it != nil && it.Type == "message" && it.Phase != "" {
		r.phases = append(r.phases, it.Phase)
	}
}

// addUsage folds a Chat Completions or Anthropic usage into r.usage, each
// count the last one said (Anthropic says output_tokens again, cumulative,
// in message_delta).
func (r *reconstruction) addUsage(u *metaUsage) {
	if u == nil {
		return
	}
	if r.usage == nil {
		r.usage = &responses.Usage{}
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&r.usage.InputTokens, u.PromptTokens)
	set(&r.usage.InputTokens, u.InputTokens)
	set(&r.usage.OutputTokens, u.CompletionTokens)
	set(&r.usage.OutputTokens, u.OutputTokens)
	cached := u.CacheRead
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		cached = d.CachedTokens
	}
	if cached != nil {
		r.usage.InputTokensDetails = &responses.InputDetails{CachedTokens: *cached}
	}
	r.usage.TotalTokens = r.usage.InputTokens + r.usage.OutputTokens
}
