package vendors_test

import (
	"net/http"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/provider/codec"
	"github.com/openmax/openmax/provider/internal/codectest"
	_ "github.com/openmax/openmax/provider/vendors"
)

// carries is what each built-in wire carries, for codectest.Draw. A wire
// registered without an entry here fails TestEveryWire.
var carries = map[string]codectest.Wire{
	"openai":    {Finishes: []string{"stop", "tool_calls", "length"}},
	"anthropic": {Signatures: true, Finishes: []string{"end_turn", "tool_use", "max_tokens"}},
	// An incomplete Responses reply yields no tool calls (the vendor's
	// own test covers it): only completed ones here.
	"responses": {Signatures: true, Finishes: []string{"completed"}},
	// Converse streams every part the fake provider can send.
	"bedrock":        {Signatures: true, Finishes: []string{"end_turn", "tool_use", "max_tokens"}},
	"bedrock-invoke": {Signatures: true, Finishes: []string{"end_turn", "tool_use", "max_tokens"}},
	// Only the finish reasons that run calls: another one turns the
	// calls into UnrunCall parts (the vendor's own test covers it).
	"gemini": {Signatures: true, Finishes: []string{"STOP", "MAX_TOKENS"}},
}

// TestEveryWire: each registered wire reads its own encoding back
// (codectest.CheckParse), and no other wire claims that body, so a
// recording under a path no wire claims still finds its wire
// (codec.ForRecording), and never a second one.
func TestEveryWire(t *testing.T) {
	for _, w := range codec.Wires() {
		in := w.Info()
		spec, ok := carries[in.Name]
		if !ok {
			t.Errorf("wire %s: no codectest spec in carries", in.Name)
			continue
		}
		t.Run(in.Name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				body := codectest.CheckParse(t, w, codectest.Draw(t, spec))
				for _, o := range codec.Wires() {
					if o.Info().Name != in.Name && o.ClaimBody(in.StreamType, body) {
						t.Fatalf("%s claims a body of %s:\n%s", o.Info().Name, in.Name, body)
					}
				}
				got, err := codec.ForRecording(codec.RecordedRequest("POST", "http://127.0.0.1/proxy", nil), in.StreamType, body)
				if err != nil || got.Info().Name != in.Name {
					t.Fatalf("ForRecording: %v, %v; want %s", got, err, in.Name)
				}
			})
		})
	}
}

// TestEndpoints: a POST to each endpoint a wire names is that wire's, and
// one to a path no wire names is no wire's.
func TestEndpoints(t *testing.T) {
	for _, w := range codec.Wires() {
		for _, ep := range w.Info().Endpoints {
			got, claim, err := codec.ForRequest(codec.RecordedRequest(http.MethodPost, "https://api.example.com"+ep, nil))
			if err != nil || got.Info().Name != w.Info().Name || claim != codec.ClaimEndpoint {
				t.Errorf("%s: %v %v %v, want %s's endpoint", ep, got, claim, err, w.Info().Name)
			}
		}
	}
	if w, _, err := codec.ForRequest(codec.RecordedRequest(http.MethodPost, "https://api.example.com/v2/foo", nil)); err == nil {
		t.Errorf("/v2/foo is %s's", w.Info().Name)
	}
}
