package fake

import (
	"testing"

	"github.com/openmax/openmax/internal/hostiletest"
)

// TestOversizedRequestBodiesAre413: a request declaring a body over
// MaxRequestBody is answered 413 before any of it is read; a chunked one
// that sends more is cut off at the limit and answered 413. Neither is
// recorded as a request or consumes a reply.
func TestOversizedRequestBodiesAre413(t *testing.T) {
	h := start(t, "replies:\n  - chunks: [{text: a}]\n")
	hostiletest.OversizedBodies(t, h.client, h.base,
		[]string{"1073741824 bytes, over the limit of 33554432 (32 MiB)"},
		[]string{"over the limit of 33554432 bytes (32 MiB)"})
	if n := len(h.srv.Requests()); n != 0 {
		t.Errorf("%d request(s) recorded", n)
	}
}
