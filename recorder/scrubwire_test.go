package recorder

import (
	"testing"

	"github.com/openmax/openmax/provider/codec"
)

// passWire is a wire whose credentials travel under names no secret word
// marks: the scrubber knows them from the registry.
type passWire struct{ codec.Wire }

func (passWire) Info() codec.Info {
	return codec.Info{Name: "pass-test", Provider: "pass-test", Default: true, StreamType: "text/event-stream",
		SecretHeaders: []string{"X-Vendor-Pass"}, SecretQuery: []string{"sk"}}
}

func init() { codec.Register(passWire{}) }

// TestSecretNamesFromTheRegistry: a header or query parameter a
// registered wire names as a credential is secret, in any case; its
// neighbours are not.
func TestSecretNamesFromTheRegistry(t *testing.T) {
	for _, tt := range []struct {
		name   string
		header bool
		want   bool
	}{
		{"X-Vendor-Pass", true, true},
		{"x-vendor-pass", true, true},
		{"X-Vendor-Passage", true, false},
		{"sk", false, true},
		{"SK", false, true},
		{"skip", false, false},
	} {
		got := SecretParam(tt.name)
		if tt.header {
			got = SecretHeader(tt.name)
		}
		if got != tt.want {
			t.Errorf("%s (header %v): secret %v, want %v", tt.name, tt.header, got, tt.want)
		}
	}
}
