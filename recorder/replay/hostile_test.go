package replay

import (
	"testing"

	"github.com/openmax/openmax/internal/hostiletest"
	"github.com/openmax/openmax/recorder/cassette"
)

// TestHandlerRefusesOversizedRequestBodies: a request declaring a body over
// MaxRequestBody is answered 413, in the vendor's error shape, before any
// of it is read; a chunked one that sends more is cut off at the limit
// and answered 413. Neither claims an interaction.
func TestHandlerRefusesOversizedRequestBodies(t *testing.T) {
	f := file(streamed(recordedBase+"/chat/completions", chat("m", "hi"), []cassette.Chunk{{Data: "data: [DONE]\n\n"}}, nil))
	base, h, client := serve(t, f, Options{})
	hostiletest.OversizedBodies(t, client, base,
		[]string{`"code":"request_too_large"`, "1073741824 bytes, over the limit of 33554432 (32 MiB)"},
		[]string{`"type":"error"`, "over the limit of 33554432 bytes (32 MiB)"})
	if u := h.Unused(); len(u) != 1 {
		t.Errorf("unused %v: an oversized request claimed an interaction", u)
	}
}
