package eventstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"pgregory.net/rapid"
)

// drawHeader draws a header of any type.
func drawHeader(t *rapid.T, label string) Header {
	name := rapid.StringMatching(`[:a-zA-Z-]{1,20}`).Draw(t, label+" name")
	var v any
	switch Type(rapid.IntRange(0, 9).Draw(t, label+" type")) {
	case TypeTrue:
		v = true
	case TypeFalse:
		v = false
	case TypeByte:
		v = rapid.Int8().Draw(t, label+" byte")
	case TypeShort:
		v = rapid.Int16().Draw(t, label+" short")
	case TypeInt:
		v = rapid.Int32().Draw(t, label+" int")
	case TypeLong:
		v = rapid.Int64().Draw(t, label+" long")
	case TypeBytes:
		v = rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, label+" bytes")
		if v.([]byte) == nil {
			v = []byte{}
		}
	case TypeString:
		v = rapid.StringN(0, 20, 60).Draw(t, label+" string")
	case TypeTimestamp:
		v = time.UnixMilli(rapid.Int64Range(-1<<50, 1<<50).Draw(t, label+" ms")).UTC()
	case TypeUUID:
		var u UUID
		copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label+" uuid"))
		v = u
	}
	return Header{Name: name, Value: v}
}

func drawMessage(t *rapid.T, label string) Message {
	var m Message
	for i := range rapid.IntRange(0, 6).Draw(t, label+" headers") {
		_ = i
		m.Headers = append(m.Headers, drawHeader(t, label))
	}
	m.Payload = rapid.SliceOfN(rapid.Byte(), 0, 200).Draw(t, label+" payload")
	if len(m.Payload) == 0 {
		m.Payload = nil
	}
	return m
}

// normal is m as decoding gives it back: an empty payload is an empty,
// non-nil slice of the body.
func normal(m Message) Message {
	if m.Payload == nil {
		m.Payload = []byte{}
	}
	return m
}

// chunked is a reader delivering its bytes in the chunk sizes drawn.
type chunked struct {
	data  []byte
	sizes []int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n, c.sizes = c.sizes[0], c.sizes[1:]
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestRoundTrip: decoding what Encode wrote gives the messages back, read
// whole by Split or streamed by a Decoder in any chunking, with the right
// offsets; cutting the stream anywhere inside a message is a truncation
// for both.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 5).Draw(t, "messages")
		var msgs []Message
		var body []byte
		var ends []int
		for i := range n {
			_ = i
			m := drawMessage(t, "message")
			b, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			msgs = append(msgs, normal(m))
			body = append(body, b...)
			ends = append(ends, len(body))
		}
		frames, tail, err := Split(body)
		if err != nil || tail != 0 || len(frames) != n {
			t.Fatalf("Split: %d frames, tail %d, err %v; want %d, 0, nil", len(frames), tail, err, n)
		}
		for i, f := range frames {
			start := 0
			if i > 0 {
				start = ends[i-1]
			}
			if f.Start != start || f.End != ends[i] {
				t.Fatalf("frame %d at [%d,%d), want [%d,%d)", i, f.Start, f.End, start, ends[i])
			}
			if !reflect.DeepEqual(f.Message, msgs[i]) {
				t.Fatalf("frame %d: %#v, want %#v", i, f.Message, msgs[i])
			}
		}
		sizes := rapid.SliceOfN(rapid.IntRange(1, 64), 0, 50).Draw(t, "chunks")
		d := NewDecoder(&chunked{data: body, sizes: sizes})
		for i := range n {
			m, err := d.Next()
			if err != nil {
				t.Fatalf("Next #%d: %v", i, err)
			}
			if !reflect.DeepEqual(m, msgs[i]) {
				t.Fatalf("message %d: %#v, want %#v", i, m, msgs[i])
			}
			if d.Offset() != int64(ends[i]) {
				t.Fatalf("offset %d after message %d, want %d", d.Offset(), i, ends[i])
			}
		}
		if _, err := d.Next(); err != io.EOF {
			t.Fatalf("after the last message: %v, want io.EOF", err)
		}
		if n == 0 {
			return
		}
		cut := rapid.IntRange(0, len(body)-1).Draw(t, "cut")
		whole := 0 // messages wholly before the cut
		for whole < n && ends[whole] <= cut {
			whole++
		}
		frames, tail, err = Split(body[:cut])
		lastEnd := 0
		if whole > 0 {
			lastEnd = ends[whole-1]
		}
		if err != nil || len(frames) != whole || tail != cut-lastEnd {
			t.Fatalf("Split of %d bytes: %d frames, tail %d, err %v; want %d, %d", cut, len(frames), tail, err, whole, cut-lastEnd)
		}
		d = NewDecoder(bytes.NewReader(body[:cut]))
		for range whole {
			if _, err := d.Next(); err != nil {
				t.Fatal(err)
			}
		}
		_, err = d.Next()
		if cut == lastEnd {
			if err != io.EOF {
				t.Fatalf("a cut between messages: %v, want io.EOF", err)
			}
			return
		}
		if !errors.Is(err, ErrTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("a cut inside a message: %v, want ErrTruncated", err)
		}
	})
}

// TestCorruption: changing any one byte of a message is a FormatError
// (the CRCs catch it), for the Decoder and Split alike.
func TestCorruption(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		body := MustEncode(drawMessage(t, "message"))
		i := rapid.IntRange(0, len(body)-1).Draw(t, "at")
		body[i] ^= rapid.ByteRange(1, 255).Draw(t, "xor")
		_, err := NewDecoder(bytes.NewReader(body)).Next()
		var fe *FormatError
		// A changed length may make the message look longer than the
		// body, but the prelude CRC is checked first.
		if !errors.As(err, &fe) || !errors.Is(err, ErrMalformed) || fe.Offset != 0 {
			t.Fatalf("byte %d changed: %v, want a FormatError", i, err)
		}
		if _, _, err := Split(body); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Split, byte %d changed: %v, want a FormatError", i, err)
		}
	})
}

// TestRandomBytes: decoding random bytes (some behind a valid prelude)
// never panics, ends with io.EOF, a truncation, a FormatError or nothing
// else, agrees with Split, and allocates no more than the bytes it read
// allow.
func TestRandomBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "bytes")
		if rapid.Bool().Draw(t, "valid prelude") {
			total := rapid.Uint32().Draw(t, "total")
			headers := rapid.Uint32Range(0, 200).Draw(t, "headers length")
			p := binary.BigEndian.AppendUint32(nil, total)
			p = binary.BigEndian.AppendUint32(p, headers)
			p = binary.BigEndian.AppendUint32(p, crc32.ChecksumIEEE(p))
			data = append(p, data...)
		}
		d := NewDecoder(bytes.NewReader(data))
		var got []Message
		var err error
		for {
			var m Message
			if m, err = d.Next(); err != nil {
				break
			}
			got = append(got, m)
		}
		switch {
		case err == io.EOF, errors.Is(err, ErrTruncated), errors.Is(err, ErrMalformed):
		default:
			t.Fatalf("error %v (%T)", err, err)
		}
		frames, _, serr := Split(data)
		if len(frames) != len(got) || errors.Is(serr, ErrMalformed) != errors.Is(err, ErrMalformed) {
			t.Fatalf("Split: %d frames (err %v), the Decoder %d (err %v)", len(frames), serr, len(got), err)
		}
	})
}

// TestHostileLength: a valid prelude claiming the largest message,
// followed by a few bytes, is a truncation, and reading it allocates
// nothing near the 16 MiB it claims.
func TestHostileLength(t *testing.T) {
	p := binary.BigEndian.AppendUint32(nil, MaxMessageLen)
	p = binary.BigEndian.AppendUint32(p, 0)
	p = binary.BigEndian.AppendUint32(p, crc32.ChecksumIEEE(p))
	data := append(p, "only ten b"...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := NewDecoder(bytes.NewReader(data)).Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "22 of the 16777216 bytes") {
		t.Fatalf("error %v, want a truncation saying how far it got", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("decoding allocated %d bytes for a 22-byte body", n)
	}
	// One byte over the maximum is refused outright.
	p = binary.BigEndian.AppendUint32(nil, MaxMessageLen+1)
	p = binary.BigEndian.AppendUint32(p, 0)
	p = binary.BigEndian.AppendUint32(p, crc32.ChecksumIEEE(p))
	if _, err := NewDecoder(bytes.NewReader(p)).Next(); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "over the maximum") {
		t.Fatalf("a message over 16 MiB: %v", err)
	}
}

// prelude builds a prelude with a valid CRC.
func preludeBytes(total, headers uint32) []byte {
	p := binary.BigEndian.AppendUint32(nil, total)
	p = binary.BigEndian.AppendUint32(p, headers)
	return binary.BigEndian.AppendUint32(p, crc32.ChecksumIEEE(p))
}

// withCRC completes a message body (prelude, headers, payload) with its
// message CRC.
func withCRC(b []byte) []byte { return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b)) }

// TestMalformed: each way a message can break the framing is a
// FormatError saying what broke.
func TestMalformed(t *testing.T) {
	good := MustEncode(Message{Headers: []Header{{":event-type", "chunk"}}, Payload: []byte("{}")})
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 1
	header := func(h []byte) []byte {
		return withCRC(append(preludeBytes(uint32(MinMessageLen+len(h)), uint32(len(h))), h...))
	}
	tests := []struct {
		name string
		body []byte
		says string
	}{
		{"prelude CRC", append([]byte{0, 0, 0, 16, 0, 0, 0, 0, 1, 2, 3, 4}, 0, 0, 0, 0), "prelude CRC mismatch"},
		{"message CRC", badCRC, "message CRC mismatch"},
		{"total under the minimum", withCRC(preludeBytes(15, 0)), "under the minimum"},
		{"headers over the maximum", preludeBytes(MaxHeadersLen+100, MaxHeadersLen+1), "headers length 131073 is over the maximum"},
		{"headers longer than the message", withCRC(preludeBytes(20, 5)), "does not fit"},
		{"empty header name", header([]byte{0, 7, 0, 0}), "empty name"},
		{"name past the end", header([]byte{9, 'a'}), "name runs past"},
		{"unknown type", header([]byte{1, 'a', 10}), "unknown value type 10"},
		{"string past the end", header([]byte{1, 'a', 7, 0, 5, 'x'}), "runs past the headers"},
		{"string length missing", header([]byte{1, 'a', 7, 0}), "length runs past"},
		{"long past the end", header([]byte{1, 'a', 5, 0, 0}), "long value runs past"},
		{"string not UTF-8", header([]byte{1, 'a', 7, 0, 1, 0xff}), "not UTF-8"},
		{"value over the maximum", header(append([]byte{1, 'a', 6, 0x80, 0}, make([]byte, 1<<15)...)), "over the maximum of 32767"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDecoder(bytes.NewReader(tt.body)).Next()
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error %v, want a FormatError saying %q", err, tt.says)
			}
			if _, _, err := Split(tt.body); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Split: %v", err)
			}
		})
	}
}

// TestKnownMessage: the first message of a real ConverseStream reply
// (cassettes/real A14: messageStart, with Bedrock's p padding) decodes to
// its three string headers and JSON payload, and encoding those gives the
// same bytes.
func TestKnownMessage(t *testing.T) {
	raw := []byte("\x00\x00\x00\x90\x00\x00\x00\x52\x31\x41\xc8\xa1" +
		"\x0b:event-type\x07\x00\x0cmessageStart" +
		"\x0d:content-type\x07\x00\x10application/json" +
		"\x0d:message-type\x07\x00\x05event" +
		`{"p":"abcdefghijklmnopqrs","role":"assistant"}` + "\x11\x76\xea\xb0")
	want := Message{
		Headers: []Header{{":event-type", "messageStart"}, {":content-type", "application/json"}, {":message-type", "event"}},
		Payload: []byte(`{"p":"abcdefghijklmnopqrs","role":"assistant"}`),
	}
	got, err := NewDecoder(iotest.OneByteReader(bytes.NewReader(raw))).Next()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %#v\nwant %#v", got, want)
	}
	if enc := MustEncode(want); !bytes.Equal(enc, raw) {
		t.Fatalf("encoded\n%q\nwant\n%q", enc, raw)
	}
	if got.String(":event-type") != "messageStart" || got.String(":nope") != "" || got.Get(":nope") != nil {
		t.Fatalf("lookups")
	}
}

// TestEncodeRefuses: Encode refuses what the framing cannot carry.
func TestEncodeRefuses(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		says string
	}{
		{"empty name", Message{Headers: []Header{{"", "x"}}}, "1 to 255 bytes"},
		{"long name", Message{Headers: []Header{{strings.Repeat("n", 256), "x"}}}, "1 to 255 bytes"},
		{"long value", Message{Headers: []Header{{"a", strings.Repeat("v", 1<<15)}}}, "over the maximum of 32767"},
		{"value type", Message{Headers: []Header{{"a", 1.5}}}, "type float64"},
		{"string not UTF-8", Message{Headers: []Header{{"a", "\xff"}}}, "UTF-8"},
		{"payload", Message{Payload: make([]byte, MaxMessageLen)}, "over the maximum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Encode(tt.m); err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error %v, want one saying %q", err, tt.says)
			}
		})
	}
}

// TestReaderFailure: a failure of the reader inside a message is returned
// wrapped (so a watchdog's error still reads as what it is), not as a
// truncation.
func TestReaderFailure(t *testing.T) {
	boom := errors.New("connection reset")
	body := MustEncode(Message{Payload: []byte("payload")})
	_, err := NewDecoder(io.MultiReader(bytes.NewReader(body[:14]), iotest.ErrReader(boom))).Next()
	if !errors.Is(err, boom) || errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "14 bytes in") {
		t.Fatalf("error %v", err)
	}
}

// FuzzDecode: no input makes the Decoder panic or disagree with Split.
func FuzzDecode(f *testing.F) {
	f.Add(MustEncode(Message{Headers: []Header{{":event-type", "chunk"}}, Payload: []byte(`{"bytes":"e30="}`)}))
	f.Add(preludeBytes(MaxMessageLen, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(bytes.NewReader(data))
		n := 0
		var err error
		for {
			if _, err = d.Next(); err != nil {
				break
			}
			n++
		}
		frames, _, serr := Split(data)
		if len(frames) != n || errors.Is(serr, ErrMalformed) != errors.Is(err, ErrMalformed) {
			t.Fatalf("Split %d (%v), Decoder %d (%v)", len(frames), serr, n, err)
		}
		for _, f := range frames {
			if re := MustEncode(f.Message); !bytes.Equal(re, data[f.Start:f.End]) {
				t.Fatalf("re-encoding a decoded message changed it")
			}
		}
	})
}
