package importer

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strings"
)

// decodeBody undoes the Content-Encoding of a message body, last coding
// first, as far as the standard library can. When it undid any, it
// returns a copy of the header without Content-Length, and with
// Content-Encoding dropped (or cut to the codings still applied); else h
// and body as they were.
func decodeBody(h http.Header, body []byte) (http.Header, []byte) {
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
		return h, body
	}
	out := body
	i := len(codings) - 1
	for ; i >= 0; i-- {
		d, ok := undo(codings[i], out)
		if !ok {
			break
		}
		out = d
	}
	if i == len(codings)-1 {
		return h, body
	}
	h = h.Clone()
	h.Del("Content-Length")
	if i < 0 {
		h.Del("Content-Encoding")
	} else {
		h.Set("Content-Encoding", strings.Join(codings[:i+1], ", "))
	}
	return h, out
}

// undo removes one content coding. An empty body, or a "gzip" one that is
// not gzip (the recording tool had decoded it already), is taken as it is.
func undo(coding string, body []byte) ([]byte, bool) {
	if len(body) == 0 {
		return body, true
	}
	switch coding {
	case "gzip", "x-gzip":
		if !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
			return body, true
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, false
		}
		return readAll(zr)
	case "deflate":
		// HTTP's deflate is zlib-wrapped; some servers send it raw.
		if zr, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
			if d, ok := readAll(zr); ok {
				return d, true
			}
		}
		return readAll(flate.NewReader(bytes.NewReader(body)))
	}
	return nil, false
}

func readAll(r io.ReadCloser) ([]byte, bool) {
	defer r.Close()
	d, err := io.ReadAll(r)
	if err != nil {
		return nil, false
	}
	return d, true
}
