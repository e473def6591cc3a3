package recorder

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"

	"github.com/openmax/openmax/recorder/cassette"
)

// NewProxy returns a reverse proxy to upstream that sends everything
// through rec, so any client whose base URL can be pointed at it is
// recorded. Paths are joined onto upstream's (upstream
// https://api.openai.com/v1 and a request for /chat/completions go to
// https://api.openai.com/v1/chat/completions) and the Host header becomes
// upstream's. Responses stream through unchanged: every read is written
// and flushed to the client at once.
//
// The client's Accept-Encoding is not passed on, so the transport asks for
// gzip itself and decodes it: the cassette holds readable (and so
// scrubbable) bodies, and the client gets the same bytes, unencoded. A
// request that fails upstream is answered 502; a body that fails midway
// aborts the response, so the client sees the stream cut as it was. A
// request body over MaxRequestBody is answered 413. Once the cassette could
// not be written (rec.Err), every request is answered 507 with that error
// and goes nowhere: none goes upstream unrecorded while seeming to succeed.
func NewProxy(upstream *url.URL, rec *Recorder) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Header.Del("Accept-Encoding")
		},
		Transport:     rec,
		FlushInterval: -1,
		BufferPool:    copyBuffers{},
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, tooLargeMessage(-1), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "openmax recorder: the upstream request failed ("+cassette.KindOf(err)+")", http.StatusBadGateway)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rec.Err(); err != nil {
			http.Error(w, "openmax "+err.Error(), http.StatusInsufficientStorage)
			return
		}
		if r.ContentLength > MaxRequestBody {
			http.Error(w, tooLargeMessage(r.ContentLength), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBody)
		rp.ServeHTTP(w, r)
	})
}

// copyBuffers lends the proxy its response copy buffers: without a pool
// httputil allocates (and clears) 32 KiB for every response, 4% of a
// recording proxy's CPU at a thousand requests.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

const copyBufferSize = 32 << 10

func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[copyBufferSize]byte)[:] }

func (copyBuffers) Put(b []byte) {
	if cap(b) == copyBufferSize {
		copyBufferPool.Put((*[copyBufferSize]byte)(b[:copyBufferSize]))
	}
}

// MaxRequestBody is the largest request body the proxy forwards and
// records (32 MiB; a model request with a long conversation is a few
// MiB). A request that declares a longer Content-Length is answered 413
// without its body being read, and one that sends more (chunked) is cut
// off there and answered 413; neither goes upstream or into the cassette.
const MaxRequestBody = 32 << 20

func tooLargeMessage(declared int64) string {
	if declared >= 0 {
		return fmt.Sprintf("openmax recorder: the request body is %d bytes, over the limit of %d (%d MiB)", declared, MaxRequestBody, MaxRequestBody>>20)
	}
	return fmt.Sprintf("openmax recorder: the request body is over the limit of %d bytes (%d MiB)", MaxRequestBody, MaxRequestBody>>20)
}
