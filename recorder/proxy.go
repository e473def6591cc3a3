package recorder

import (
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
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
// aborts the response, so the client sees the stream cut as it was.
func NewProxy(upstream *url.URL, rec *Recorder) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Header.Del("Accept-Encoding")
		},
		Transport:     rec,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "openmax recorder: the upstream request failed ("+Classify(err)+")", http.StatusBadGateway)
		},
	}
}
