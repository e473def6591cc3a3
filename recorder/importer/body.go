package importer

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openmax/openmax/recorder"
)

// maxDecoded bounds a decoded body (recorder.MaxDecodedBody); tests lower
// it.
var maxDecoded int64 = recorder.MaxDecodedBody

// decodeBody undoes the Content-Encoding of a message body, last coding
// first, as far as the standard library can. When it undid any, it
// returns a copy of the header without Content-Length, and with
// Content-Encoding dropped (or cut to the codings still applied); else h
// and body as they were. A body that decodes to more than maxDecoded
// bytes (a "gzip bomb") is an error wrapping recorder.ErrDecodedTooLarge.
func decodeBody(h http.Header, body []byte) (http.Header, []byte, error) {
	var codings []string
	for _, v := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) == 0 {
		return h, body, nil
	}
	out := body
	i := len(codings) - 1
	for ; i >= 0; i-- {
		d, ok, err := undo(codings[i], out)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		out = d
	}
	if i == len(codings)-1 {
		return h, body, nil
	}
	h = h.Clone()
	h.Del("Content-Length")
	if i < 0 {
		h.Del("Content-Encoding")
	} else {
		h.Set("Content-Encoding", strings.Join(codings[:i+1], ", "))
	}
	return h, out, nil
}

// undo removes one content coding. An empty body, or a "gzip" one that is
// not gzip (the recording tool had decoded it already), is taken as it is.
// The error is only for a body that decodes past maxDecoded.
func undo(coding string, body []byte) ([]byte, bool, error) {
	if len(body) == 0 {
		return body, true, nil
	}
	switch coding {
	case "gzip", "x-gzip":
		if !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
			return body, true, nil
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, false, nil
		}
		return readAll(coding, zr)
	case "deflate":
		// HTTP's deflate is zlib-wrapped; some servers send it raw.
		if zr, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
			if d, ok, err := readAll(coding, zr); ok || err != nil {
				return d, ok, err
			}
		}
		return readAll(coding, flate.NewReader(bytes.NewReader(body)))
	}
	return nil, false, nil
}

func readAll(coding string, r io.ReadCloser) ([]byte, bool, error) {
	defer r.Close()
	d, err := io.ReadAll(io.LimitReader(r, maxDecoded+1))
	if int64(len(d)) > maxDecoded {
		return nil, false, fmt.Errorf("%w: its Content-Encoding %s decodes to more than %d bytes (%d MiB)", recorder.ErrDecodedTooLarge, coding, maxDecoded, maxDecoded>>20)
	}
	if err != nil {
		return nil, false, nil
	}
	return d, true, nil
}
