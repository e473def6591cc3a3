// Package eventstream reads and writes AWS's binary event-stream framing
// (application/vnd.amazon.eventstream), the wire of Bedrock's streaming
// replies. A message is
//
//	total length   4 bytes, big-endian, the whole message
//	headers length 4 bytes, big-endian
//	prelude CRC    4 bytes, CRC-32 (IEEE) of the 8 bytes before it
//	headers        typed name/value pairs
//	payload        the rest, up to the message CRC
//	message CRC    4 bytes, CRC-32 (IEEE) of everything before it
//
// A header is a name (1 byte of length, then the name), a type byte and a
// value of that type: bool true (0) and false (1) with no value, byte (2),
// short (3), int (4), long (5, big-endian two's complement), bytes (6) and
// string (7, 2 bytes of length then the bytes), timestamp (8, milliseconds
// since the Unix epoch as a long) and uuid (9, 16 bytes).
//
// Decoding is bounded whatever the input says: a message may not pass
// MaxMessageLen nor its headers MaxHeadersLen, the prelude's CRC is checked
// before its lengths are believed, and a message's bytes are read as they
// arrive, so a hostile length followed by nothing allocates nothing near
// it. A CRC mismatch or a length or header that breaks the rules is a
// *FormatError (errors.Is ErrMalformed); a stream that ends inside a
// message is ErrTruncated; a clean end between messages is io.EOF.
package eventstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
	"unicode/utf8"
)

// Limits of the framing.
const (
	// MaxMessageLen is the largest message AWS sends or accepts: 16 MiB.
	MaxMessageLen = 16 << 20
	// MaxHeadersLen is the largest headers section: 128 KiB.
	MaxHeadersLen = 128 << 10
	// MaxHeaderValueLen is the longest string or bytes header value (its
	// length is a signed 16-bit number on the wire).
	MaxHeaderValueLen = 1<<15 - 1
	// MaxHeaderNameLen is the longest header name (one byte of length).
	MaxHeaderNameLen = 255

	preludeLen = 12 // total length, headers length, prelude CRC
	crcLen     = 4
	// MinMessageLen is a message with no headers and no payload.
	MinMessageLen = preludeLen + crcLen
)

// Type is the type of a header value.
type Type byte

// The header value types.
const (
	TypeTrue      Type = 0
	TypeFalse     Type = 1
	TypeByte      Type = 2
	TypeShort     Type = 3
	TypeInt       Type = 4
	TypeLong      Type = 5
	TypeBytes     Type = 6
	TypeString    Type = 7
	TypeTimestamp Type = 8
	TypeUUID      Type = 9
)

var typeNames = [...]string{"true", "false", "byte", "short", "int", "long", "bytes", "string", "timestamp", "uuid"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type %d", byte(t))
}

// UUID is the value of a uuid header.
type UUID [16]byte

// Header is one header of a message. Value holds, by type: bool (true and
// false), int8 (byte), int16 (short), int32 (int), int64 (long), []byte
// (bytes), string (string), time.Time (timestamp, in UTC, whole
// milliseconds) or UUID (uuid).
type Header struct {
	Name  string
	Value any
}

// Message is one message of an event stream.
type Message struct {
	Headers []Header
	Payload []byte
}

// Get is the value of the first header named name, nil when there is
// none.
func (m Message) Get(name string) any {
	for _, h := range m.Headers {
		if h.Name == name {
			return h.Value
		}
	}
	return nil
}

// String is the value of the first string header named name, "" when
// there is none or it is not a string.
func (m Message) String(name string) string {
	s, _ := m.Get(name).(string)
	return s
}

// ErrMalformed is what every *FormatError matches.
var ErrMalformed = errors.New("malformed event stream")

// ErrTruncated marks a stream that ended inside a message.
var ErrTruncated = errors.New("the event stream ended inside a message")

// FormatError is a message that breaks the framing: a CRC that does not
// check out, a length out of bounds, a header that does not parse.
type FormatError struct {
	// Offset is where the message starts in the stream.
	Offset int64
	Reason string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: the message at byte %d: %s", ErrMalformed, e.Offset, e.Reason)
}

// Is makes a FormatError match ErrMalformed.
func (e *FormatError) Is(target error) bool { return target == ErrMalformed }

// prelude is a message's first 12 bytes, checked.
type prelude struct {
	total, headers uint32
}

// readPrelude checks the 12 bytes of a prelude: its CRC first, then the
// lengths it gives.
func readPrelude(b []byte, off int64) (prelude, error) {
	p := prelude{total: binary.BigEndian.Uint32(b[0:4]), headers: binary.BigEndian.Uint32(b[4:8])}
	if got, want := crc32.ChecksumIEEE(b[0:8]), binary.BigEndian.Uint32(b[8:12]); got != want {
		return p, &FormatError{off, fmt.Sprintf("prelude CRC mismatch (computed %08x, the message says %08x)", got, want)}
	}
	switch {
	case p.total < MinMessageLen:
		return p, &FormatError{off, fmt.Sprintf("total length %d is under the minimum of %d", p.total, MinMessageLen)}
	case p.total > MaxMessageLen:
		return p, &FormatError{off, fmt.Sprintf("total length %d is over the maximum of %d (16 MiB)", p.total, MaxMessageLen)}
	case p.headers > MaxHeadersLen:
		return p, &FormatError{off, fmt.Sprintf("headers length %d is over the maximum of %d (128 KiB)", p.headers, MaxHeadersLen)}
	case p.headers > p.total-MinMessageLen:
		return p, &FormatError{off, fmt.Sprintf("headers length %d does not fit in a message of %d bytes", p.headers, p.total)}
	}
	return p, nil
}

// parseBody checks a whole message (msg, its prelude included) and reads
// its headers and payload.
func parseBody(msg []byte, p prelude, off int64) (Message, error) {
	end := len(msg) - crcLen
	if got, want := crc32.ChecksumIEEE(msg[:end]), binary.BigEndian.Uint32(msg[end:]); got != want {
		return Message{}, &FormatError{off, fmt.Sprintf("message CRC mismatch (computed %08x, the message says %08x)", got, want)}
	}
	hs, err := parseHeaders(msg[preludeLen : preludeLen+int(p.headers)])
	if err != nil {
		return Message{}, &FormatError{off, err.Error()}
	}
	payload := msg[preludeLen+int(p.headers) : end]
	return Message{Headers: hs, Payload: payload}, nil
}

// parseHeaders reads a headers section.
func parseHeaders(b []byte) ([]Header, error) {
	var hs []Header
	for len(b) > 0 {
		n := int(b[0])
		if n == 0 {
			return nil, errors.New("a header with an empty name")
		}
		if len(b) < 1+n+1 {
			return nil, errors.New("a header name runs past the headers")
		}
		name := string(b[1 : 1+n])
		typ := Type(b[1+n])
		b = b[2+n:]
		var v any
		var size int
		switch typ {
		case TypeTrue:
			v = true
		case TypeFalse:
			v = false
		case TypeByte:
			size = 1
		case TypeShort:
			size = 2
		case TypeInt:
			size = 4
		case TypeLong, TypeTimestamp:
			size = 8
		case TypeUUID:
			size = 16
		case TypeBytes, TypeString:
			if len(b) < 2 {
				return nil, fmt.Errorf("header %q: its value's length runs past the headers", name)
			}
			size = int(binary.BigEndian.Uint16(b))
			if size > MaxHeaderValueLen {
				return nil, fmt.Errorf("header %q: a value of %d bytes is over the maximum of %d", name, size, MaxHeaderValueLen)
			}
			b = b[2:]
		default:
			return nil, fmt.Errorf("header %q has unknown value type %d", name, byte(typ))
		}
		if len(b) < size {
			return nil, fmt.Errorf("header %q: its %s value runs past the headers", name, typ)
		}
		val := b[:size]
		b = b[size:]
		switch typ {
		case TypeByte:
			v = int8(val[0])
		case TypeShort:
			v = int16(binary.BigEndian.Uint16(val))
		case TypeInt:
			v = int32(binary.BigEndian.Uint32(val))
		case TypeLong:
			v = int64(binary.BigEndian.Uint64(val))
		case TypeTimestamp:
			v = time.UnixMilli(int64(binary.BigEndian.Uint64(val))).UTC()
		case TypeUUID:
			v = UUID(val)
		case TypeBytes:
			v = append([]byte{}, val...)
		case TypeString:
			if !utf8.Valid(val) {
				return nil, fmt.Errorf("header %q: its string value is not UTF-8", name)
			}
			v = string(val)
		}
		hs = append(hs, Header{Name: name, Value: v})
	}
	return hs, nil
}

// Decoder reads messages from a stream. It is not safe for concurrent
// use.
type Decoder struct {
	r   io.Reader
	off int64 // where the next message starts
	pre [preludeLen]byte
}

// NewDecoder returns a decoder reading r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: r} }

// Offset is where the next message starts: the bytes of the stream taken
// by the messages read so far.
func (d *Decoder) Offset() int64 { return d.off }

// readChunk bounds how much is read at once, so the buffer of a message
// grows with the bytes that actually arrive, never with what its length
// claims.
const readChunk = 32 << 10

// Next reads the next message. At a clean end of the stream between
// messages it returns io.EOF; a stream that ends inside a message is an
// error matching ErrTruncated and io.ErrUnexpectedEOF; a message that
// breaks the framing is a *FormatError. Another failure of the reader
// (a reset connection, a watchdog) is returned wrapped, with where it
// happened. After an error the decoder is done: the stream cannot be
// resynchronised.
func (d *Decoder) Next() (Message, error) {
	n, err := io.ReadFull(d.r, d.pre[:])
	if err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return Message{}, io.EOF
		}
		return Message{}, d.readError(err, n, preludeLen)
	}
	p, err := readPrelude(d.pre[:], d.off)
	if err != nil {
		return Message{}, err
	}
	buf := make([]byte, preludeLen, min(int(p.total), preludeLen+readChunk))
	copy(buf, d.pre[:])
	for len(buf) < int(p.total) {
		want := min(int(p.total)-len(buf), readChunk)
		if cap(buf)-len(buf) < want {
			grown := make([]byte, len(buf), min(int(p.total), 2*cap(buf)+want))
			copy(grown, buf)
			buf = grown
		}
		k, err := io.ReadFull(d.r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+k]
		if err != nil {
			return Message{}, d.readError(err, len(buf), int(p.total))
		}
	}
	m, err := parseBody(buf, p, d.off)
	if err != nil {
		return Message{}, err
	}
	d.off += int64(p.total)
	return m, nil
}

// readError is the failure of a read inside a message, got of want bytes
// in.
func (d *Decoder) readError(err error, got, want int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %d of the %d bytes of the message at byte %d arrived: %w", ErrTruncated, got, want, d.off, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("eventstream: reading the message at byte %d (%d bytes in): %w", d.off, got, err)
}

// Frame is one message of a recorded stream and where it lies in it.
type Frame struct {
	Start, End int // [Start, End) in the body
	Message    Message
}

// Split cuts a whole recorded body into its messages, each with its
// [Start, End) offsets. tail is the length of what follows the last whole
// message: an unterminated message of a stream cut short. A message that
// breaks the framing stops the split with a *FormatError; the messages
// before it are returned, and tail then counts from where it starts.
func Split(body []byte) (frames []Frame, tail int, err error) {
	off := 0
	for len(body)-off >= preludeLen {
		p, err := readPrelude(body[off:off+preludeLen], int64(off))
		if err != nil {
			return frames, len(body) - off, err
		}
		if len(body)-off < int(p.total) {
			break
		}
		m, err := parseBody(body[off:off+int(p.total)], p, int64(off))
		if err != nil {
			return frames, len(body) - off, err
		}
		frames = append(frames, Frame{Start: off, End: off + int(p.total), Message: m})
		off += int(p.total)
	}
	return frames, len(body) - off, nil
}

// Encode writes m as one message. It fails when a header breaks the
// framing's rules (an empty or too long name, a value too long or of a
// type it cannot carry) or the message would pass MaxMessageLen.
func Encode(m Message) ([]byte, error) {
	var hs []byte
	for _, h := range m.Headers {
		var err error
		if hs, err = appendHeader(hs, h); err != nil {
			return nil, err
		}
	}
	if len(hs) > MaxHeadersLen {
		return nil, fmt.Errorf("eventstream: %d bytes of headers are over the maximum of %d", len(hs), MaxHeadersLen)
	}
	total := MinMessageLen + len(hs) + len(m.Payload)
	if total > MaxMessageLen {
		return nil, fmt.Errorf("eventstream: a message of %d bytes is over the maximum of %d", total, MaxMessageLen)
	}
	out := make([]byte, 0, total)
	out = binary.BigEndian.AppendUint32(out, uint32(total))
	out = binary.BigEndian.AppendUint32(out, uint32(len(hs)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
	out = append(out, hs...)
	out = append(out, m.Payload...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out)), nil
}

// MustEncode is Encode for messages known to be valid (the encoders' own):
// it panics on an error.
func MustEncode(m Message) []byte {
	b, err := Encode(m)
	if err != nil {
		panic(err)
	}
	return b
}

func appendHeader(out []byte, h Header) ([]byte, error) {
	if h.Name == "" || len(h.Name) > MaxHeaderNameLen {
		return nil, fmt.Errorf("eventstream: header name %q: a name has 1 to %d bytes", h.Name, MaxHeaderNameLen)
	}
	out = append(out, byte(len(h.Name)))
	out = append(out, h.Name...)
	varLen := func(t Type, b []byte) ([]byte, error) {
		if len(b) > MaxHeaderValueLen {
			return nil, fmt.Errorf("eventstream: header %q: a value of %d bytes is over the maximum of %d", h.Name, len(b), MaxHeaderValueLen)
		}
		out = append(out, byte(t))
		out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
		return append(out, b...), nil
	}
	switch v := h.Value.(type) {
	case bool:
		if v {
			return append(out, byte(TypeTrue)), nil
		}
		return append(out, byte(TypeFalse)), nil
	case int8:
		return append(out, byte(TypeByte), byte(v)), nil
	case int16:
		return binary.BigEndian.AppendUint16(append(out, byte(TypeShort)), uint16(v)), nil
	case int32:
		return binary.BigEndian.AppendUint32(append(out, byte(TypeInt)), uint32(v)), nil
	case int64:
		return binary.BigEndian.AppendUint64(append(out, byte(TypeLong)), uint64(v)), nil
	case time.Time:
		return binary.BigEndian.AppendUint64(append(out, byte(TypeTimestamp)), uint64(v.UnixMilli())), nil
	case UUID:
		return append(append(out, byte(TypeUUID)), v[:]...), nil
	case []byte:
		return varLen(TypeBytes, v)
	case string:
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("eventstream: header %q: a string value must be UTF-8", h.Name)
		}
		return varLen(TypeString, []byte(v))
	}
	return nil, fmt.Errorf("eventstream: header %q: a value of type %T has no header type", h.Name, h.Value)
}
