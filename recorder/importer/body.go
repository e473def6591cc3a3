package importer

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/openmax/openmax/recorder"
)

// maxDecoded bounds a decoded body (recorder.MaxDecodedBody); tests lower
// it.
var maxDecoded int64 = recorder.MaxDecodedBody

// decodeBody undoes the Content-Encoding of a message body, last coding
// first, with the recorder's bounded decoder. When the body had any coding
// it returns a copy of the header without Content-Length and
// Content-Encoding, and the decoded body; a body it cannot decode (br,
// zstd, corrupt data) becomes the recorder's placeholder, since stored
// encoded it could not be scrubbed. An empty body, or a "gzip" one that is
// not gzip (the recording tool had decoded it already), is taken as it is.
// A body that decodes to more than maxDecoded bytes (a "gzip bomb") is an
// error wrapping recorder.ErrDecodedTooLarge.
func decodeBody(h http.Header, body []byte) (http.Header, []byte, error) {
	codings := recorder.ContentCodings(h)
	if len(codings) == 0 {
		return h, body, nil
	}
	out := body
	for i := len(codings) - 1; i >= 0 && len(out) > 0; i-- {
		c := codings[i]
		if (c == "gzip" || c == "x-gzip") && !bytes.HasPrefix(out, []byte{0x1f, 0x8b}) {
			continue
		}
		d, err := recorder.DecodeLimited(c, out, maxDecoded)
		if errors.Is(err, recorder.ErrDecodedTooLarge) {
			return nil, nil, fmt.Errorf("its Content-Encoding %s: %w", c, err)
		}
		if err != nil {
			out = []byte(recorder.Placeholder(codings[:i+1], len(out), err))
			break
		}
		out = d
	}
	h = h.Clone()
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	return h, out, nil
}
