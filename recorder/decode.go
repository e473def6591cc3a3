package recorder

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// MaxDecodedBody is the most bytes of a body the recorder keeps (64 MiB):
// a content-encoded body is decoded at most this far, so a small
// compressed body that expands without bound (a "gzip bomb") costs at most
// this much memory, and a response body past it passes through to the
// client but is stored as a placeholder (BodyNotStored).
const MaxDecodedBody = 64 << 20

// bodyLimit is MaxDecodedBody; tests lower it.
var bodyLimit int64 = MaxDecodedBody

// ErrDecodedTooLarge is returned (wrapped) when a body decodes to more than
// MaxDecodedBody bytes.
var ErrDecodedTooLarge = errors.New("the decoded body is over the limit")

// errUndecodable is returned (wrapped) for a content coding the recorder
// cannot undo.
var errUndecodable = errors.New("a content coding the recorder cannot decode")

// ContentCodings lists the codings of h's Content-Encoding in the order
// they were applied, without identity, lower case.
func ContentCodings(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				out = append(out, c)
			}
		}
	}
	return out
}

// DecodeLimited undoes one content coding (gzip, x-gzip or deflate, zlib
// wrapped or raw) of data, decoding at most max bytes: more is
// ErrDecodedTooLarge. Any other coding is refused.
func DecodeLimited(coding string, data []byte, max int64) ([]byte, error) {
	pieces, err := decodePieces(coding, []string{string(data)}, max)
	if err != nil {
		return nil, err
	}
	return []byte(pieces[0]), nil
}

// decodeChunks undoes codings (as ContentCodings lists them: the last
// applied is undone first) of a body that arrived as chunks. Piece i is
// what the decoder gave out by the time it asked for bytes past chunk i,
// so the pieces keep the chunks' timing as closely as the coding allows.
// A body cut short (an unexpected EOF) keeps what decoded; any other
// failure, a coding it cannot undo and a body decoding past max are
// errors.
func decodeChunks(codings []string, chunks []string, max int64) ([]string, error) {
	for i := len(codings) - 1; i >= 0; i-- {
		var err error
		if chunks, err = decodePieces(codings[i], chunks, max); err != nil {
			return nil, err
		}
	}
	return chunks, nil
}

func decodePieces(coding string, chunks []string, max int64) ([]string, error) {
	f := &feeder{chunks: chunks, marks: make([]int64, len(chunks))}
	for i := range f.marks {
		f.marks[i] = -1
	}
	var (
		dec io.Reader
		err error
	)
	switch coding {
	case "gzip", "x-gzip":
		dec, err = gzip.NewReader(f)
	case "deflate":
		// HTTP's deflate is zlib-wrapped; some servers send it raw.
		if b0, b1, ok := f.peek2(); ok && b0&0x0f == 8 && (uint16(b0)<<8|uint16(b1))%31 == 0 {
			dec, err = zlib.NewReader(f)
		} else {
			dec = flate.NewReader(f)
		}
	default:
		return nil, fmt.Errorf("%w: %q", errUndecodable, coding)
	}
	if err == io.EOF && f.total() == 0 {
		return make([]string, len(chunks)), nil // an empty body
	}
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", coding, err)
	}
	var out bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, rerr := dec.Read(buf)
		out.Write(buf[:n])
		f.collected += int64(n)
		if f.collected > max {
			return nil, fmt.Errorf("%w: a %s body decodes to more than %d bytes (%d MiB)", ErrDecodedTooLarge, coding, max, max>>20)
		}
		if rerr == io.EOF {
			break
		}
		if errors.Is(rerr, io.ErrUnexpectedEOF) {
			break // cut short: keep what decoded
		}
		if rerr != nil {
			return nil, fmt.Errorf("decoding %s: %w", coding, rerr)
		}
	}
	body := out.String()
	pieces := make([]string, len(chunks))
	var prev int64
	for i, m := range f.marks {
		if m < 0 || i == len(chunks)-1 {
			m = int64(len(body))
		}
		if m < prev {
			m = prev
		}
		pieces[i] = body[prev:m]
		prev = m
	}
	return pieces, nil
}

// feeder serves chunks to a decoder one byte source, noting for each chunk
// how many decoded bytes had been collected when the decoder first asked
// for a byte past it.
type feeder struct {
	chunks    []string
	i, off    int
	collected int64
	marks     []int64
}

// next moves past exhausted chunks, marking them; false at the end.
func (f *feeder) next() bool {
	for f.i < len(f.chunks) && f.off >= len(f.chunks[f.i]) {
		f.marks[f.i] = f.collected
		f.i++
		f.off = 0
	}
	return f.i < len(f.chunks)
}

func (f *feeder) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if !f.next() {
		return 0, io.EOF
	}
	n := copy(p, f.chunks[f.i][f.off:])
	f.off += n
	return n, nil
}

func (f *feeder) ReadByte() (byte, error) {
	if !f.next() {
		return 0, io.EOF
	}
	b := f.chunks[f.i][f.off]
	f.off++
	return b, nil
}

// peek2 returns the first two bytes of the body, without consuming them.
func (f *feeder) peek2() (byte, byte, bool) {
	var b []byte
	for _, c := range f.chunks {
		b = append(b, c[:min(len(c), 2-len(b))]...)
		if len(b) == 2 {
			return b[0], b[1], true
		}
	}
	return 0, 0, false
}

func (f *feeder) total() int {
	n := 0
	for _, c := range f.chunks {
		n += len(c)
	}
	return n
}

// BodyNotStored starts the placeholder a cassette holds instead of a body
// the recorder could not decode (and so could not scrub).
const BodyNotStored = "[openmax recorder: body not stored: "

// Placeholder is the text stored instead of a body of size bytes whose
// codings could not be undone (err says why).
func Placeholder(codings []string, size int, err error) string {
	return fmt.Sprintf("%sits %d bytes of Content-Encoding %s could not be decoded, so they could not be scrubbed: %v]", BodyNotStored, size, strings.Join(codings, ", "), err)
}

// decodeRecorded decodes a recorded body's chunks (with their arrival
// offsets); a body it cannot decode becomes one placeholder chunk at the
// first chunk's offset.
func decodeRecorded(codings []string, raw []string, ats []time.Duration) ([]string, []time.Duration) {
	dec, err := decodeChunks(codings, raw, bodyLimit)
	if err == nil {
		return dec, ats
	}
	size := 0
	for _, p := range raw {
		size += len(p)
	}
	var at time.Duration
	if len(ats) > 0 {
		at = ats[0]
	}
	return []string{Placeholder(codings, size, err)}, []time.Duration{at}
}

// decodeRequestBody is decodeRecorded for a request body: its decoded
// bytes, or the placeholder.
func decodeRequestBody(codings []string, body []byte) []byte {
	dec, err := decodeChunks(codings, []string{string(body)}, bodyLimit)
	if err != nil {
		return []byte(Placeholder(codings, len(body), err))
	}
	return []byte(strings.Join(dec, ""))
}
