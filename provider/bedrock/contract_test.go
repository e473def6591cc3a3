package bedrock

import (
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strings"
	"testing"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/httpx"
	"github.com/openmax/openmax/provider/internal/codectest"
	"github.com/openmax/openmax/provider/internal/providertest"
)

// contractVendor is the shared vendor-client contract's view of api: the
// client takes the contract's key as a Bedrock API key (a bearer token).
func contractVendor(api API) providertest.Vendor {
	v := providertest.Vendor{
		Name: "bedrock",
		New: func(base string, hc *httpx.Client, key string) (provider.Provider, error) {
			return New(Config{API: api, APIKey: key, BaseURL: base, Model: "model-test", HTTP: hc})
		},
		Path: Path(api, "contract-model"),
		Headers: func(key string) http.Header {
			return http.Header{"Authorization": {"Bearer " + key}, "Accept": {ContentType}}
		},
		HTTPErrorBody:   HTTPErrorBody,
		HTTPErrorHeader: HTTPErrorHeader,
		ErrorEvent:      ExceptionFrame,
		RequestFields: func(path string, body []byte) (string, bool) {
			m, a, ok := ParsePath(path)
			return m, ok && a == api
		},
		Binary:    true,
		NoEvents:  "before any event",
		Malformed: "malformed",
		Endless:   endless(api),
	}
	if api == APIInvoke {
		v.Encoder = func(u *provider.Usage) codectest.Encoder { return NewInvokeEncoder("msg_bdrk_1", "claude-test", u) }
		v.Stop, v.ToolStop = "end_turn", "tool_use"
		v.Truncated = "ended without message_stop"
	} else {
		v.Encoder = func(u *provider.Usage) codectest.Encoder { return NewConverseEncoder(u) }
		v.Stop, v.ToolStop = "end_turn", "tool_use"
		v.FinishEndsReply = true
		v.Truncated = "ended without messageStop"
	}
	return v
}

// endless are the never-ending bodies of the event-stream framing.
func endless(api API) []providertest.Endless {
	var open, unknown string
	if api == APIInvoke {
		open = string(NewInvokeEncoder("m", "c", nil).Open())
	} else {
		open = string(NewConverseEncoder(nil).Open())
	}
	unknown = string(EventFrame("someFutureEvent", []byte(`{}`)))
	// A message whose prelude claims the largest size, and whose bytes
	// then never end.
	huge := binary.BigEndian.AppendUint32(nil, 16<<20)
	huge = binary.BigEndian.AppendUint32(huge, 0)
	huge = binary.BigEndian.AppendUint32(huge, crc32.ChecksumIEEE(huge))
	return []providertest.Endless{
		{Name: "endless events of an unknown type", Head: open, Unit: unknown, Max: 1 << 20, Want: "max reply bytes"},
		{Name: "a 16 MiB message that never ends", Head: open + string(huge), Unit: strings.Repeat("x", 64), Max: 1 << 20, Want: "max reply bytes"},
		{Name: "gzip of a 16 MiB message, decoded by the client", Head: open + string(huge), Unit: strings.Repeat("x", 64), Zip: true, DecodeSelf: true, Max: 1 << 20, Want: "max reply bytes"},
	}
}

// TestContract runs the shared vendor-client contract on both operations.
func TestContract(t *testing.T) {
	for _, api := range []API{APIConverse, APIInvoke} {
		t.Run(string(api), func(t *testing.T) { providertest.Run(t, contractVendor(api)) })
	}
}
