package scan

// Bodies: decoded (content codings, bounded), then read as JSON, SSE,
// AWS eventstream frames, form fields or text.

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"mime"
	"strconv"
	"strings"

	"github.com/openmax/openmax/recorder"
)

// body scans a body's bytes, decoded as its headers and its bytes say. It
// returns the bytes as decoded (nil, false when it could not read them).
func (s *scanner) body(p place, data []byte, headers map[string][]string) ([]byte, bool) {
	if len(data) == 0 {
		return data, true
	}
	max := s.opt.maxBody()
	if int64(len(data)) > max {
		s.problem(p.from, fmt.Sprintf("%s: over %d MiB, not scanned", p.where, max>>20))
		return nil, false
	}
	var codings []string
	for _, v := range headers["content-encoding"] {
		for _, c := range strings.Split(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) == 0 && len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		codings = []string{"gzip"}
	}
	if len(codings) > 0 {
		decoded := data
		for i := len(codings) - 1; i >= 0; i-- {
			d, err := recorder.DecodeLimited(codings[i], decoded, max)
			if errors.Is(err, recorder.ErrDecodedTooLarge) {
				s.problem(p.from, fmt.Sprintf("%s: decodes (%s) to over %d MiB, not scanned", p.where, codings[i], max>>20))
				return nil, false
			}
			if err != nil {
				// A body stored decoded under its original header, or a coding
				// the recorder cannot undo: the bytes as they are.
				if isText(data) {
					decoded = data
					break
				}
				s.problem(p.from, fmt.Sprintf("%s: content coding %s not decoded (%v): scanned as bytes", p.where, codings[i], err))
				decoded = data
				break
			}
			decoded = d
			p.where = p.where + " (" + codings[i] + ")"
		}
		data = decoded
	}
	ct := ""
	if v := headers["content-type"]; len(v) > 0 {
		ct, _, _ = mime.ParseMediaType(v[0])
	}
	s.content(p, data, ct, 0)
	return data, true
}

// isText reports whether b looks like text (no NUL, valid start).
func isText(b []byte) bool {
	return !bytes.Contains(b[:min(len(b), 512)], []byte{0})
}

// content scans decoded bytes as what they are.
func (s *scanner) content(p place, data []byte, ct string, depth int) {
	t := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case isEventStream(data):
		s.eventStream(p, data)
	case len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t):
		s.json(p, t, "$", depth)
	case bytes.HasPrefix(t, []byte("data:")) || bytes.HasPrefix(t, []byte("event:")) || bytes.HasPrefix(t, []byte("id:")) || bytes.HasPrefix(t, []byte(":")):
		s.sse(p, data, depth)
	case ct == "application/x-www-form-urlencoded":
		for _, part := range strings.Split(string(data), "&") {
			k, v, _ := strings.Cut(part, "=")
			s.param(p.at(p.where+" form "+safeKey(unescape(k))), unescape(k), unescape(v))
		}
	default:
		s.scalarText(p, string(data))
	}
}

// sse scans the events of a Server-Sent Events body: each data line as
// JSON when it is JSON, else as text.
func (s *scanner) sse(p place, data []byte, depth int) {
	n := 0
	event := ""
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		switch {
		case len(line) == 0:
			if event != "" {
				n++
			}
			event = ""
		case bytes.HasPrefix(line, []byte("event:")):
			event = strings.TrimSpace(string(line[6:]))
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimSpace(line[5:])
			name := event
			if name == "" {
				name = "data"
			}
			q := p.at(fmt.Sprintf("%s event %d (%s)", p.where, n, safeKey(name)))
			if len(d) > 0 && (d[0] == '{' || d[0] == '[') && json.Valid(d) {
				s.json(q, d, "$", depth)
			} else {
				s.scalarText(q, string(d))
			}
			if event == "" {
				n++
			}
		default:
			s.scalarText(p, string(line))
		}
	}
}

// isEventStream reports whether data starts with an AWS eventstream frame
// (a prelude whose CRC holds).
func isEventStream(b []byte) bool {
	if len(b) < 16 {
		return false
	}
	total := binary.BigEndian.Uint32(b[0:4])
	hlen := binary.BigEndian.Uint32(b[4:8])
	return total >= 16 && hlen <= total-16 && crc32.ChecksumIEEE(b[0:8]) == binary.BigEndian.Uint32(b[8:12])
}

// eventStream scans the frames of an AWS eventstream body: each payload
// as JSON (a Bedrock chunk's base64 "bytes" decoded and read as JSON too),
// a frame it cannot read and what follows as text.
func (s *scanner) eventStream(p place, b []byte) {
	for n := 0; len(b) > 0; n++ {
		if !isEventStream(b) || int(binary.BigEndian.Uint32(b[0:4])) > len(b) {
			s.scalarText(p.at(fmt.Sprintf("%s frame %d", p.where, n)), string(b))
			return
		}
		total := binary.BigEndian.Uint32(b[0:4])
		hlen := binary.BigEndian.Uint32(b[4:8])
		frame := b[:total]
		b = b[total:]
		headers := frame[12 : 12+hlen]
		payload := frame[12+hlen : total-4]
		q := p.at(fmt.Sprintf("%s frame %d (%s)", p.where, n, safeKey(eventType(headers))))
		s.scalarText(q, string(headers))
		s.content(q, payload, "", 1)
	}
}

// eventType is the :event-type (or :exception-type) header of a frame.
func eventType(h []byte) string {
	for len(h) > 0 {
		nl := int(h[0])
		if len(h) < 1+nl+1 {
			return ""
		}
		name := string(h[1 : 1+nl])
		typ := h[1+nl]
		h = h[2+nl:]
		var val []byte
		switch typ {
		case 0, 1:
		case 2:
			if len(h) < 1 {
				return ""
			}
			h = h[1:]
		case 3:
			if len(h) < 2 {
				return ""
			}
			h = h[2:]
		case 4:
			if len(h) < 4 {
				return ""
			}
			h = h[4:]
		case 5, 8:
			if len(h) < 8 {
				return ""
			}
			h = h[8:]
		case 6, 7:
			if len(h) < 2 {
				return ""
			}
			l := int(binary.BigEndian.Uint16(h))
			if len(h) < 2+l {
				return ""
			}
			val, h = h[2:2+l], h[2+l:]
		case 9:
			if len(h) < 16 {
				return ""
			}
			h = h[16:]
		default:
			return ""
		}
		if name == ":event-type" || name == ":exception-type" {
			return string(val)
		}
	}
	return ""
}

// maxDepth bounds JSON read inside JSON strings (tool arguments, Bedrock's
// base64 event bytes).
const maxDepth = 4

// json scans a JSON text: every string value with the named rules, by its
// field name (secret-field), and as a whole token (high-entropy) unless
// its field is an id or a payload. A string that is itself JSON, or the
// base64 of a JSON object, is read as JSON in turn.
func (s *scanner) json(p place, data []byte, root string, depth int) {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object  bool
		key     string
		index   int
		path    string
		wantKey bool
	}
	stack := []frame{}
	path := func() (string, string) {
		if len(stack) == 0 {
			return root, ""
		}
		f := stack[len(stack)-1]
		if f.object {
			return f.path + "." + safeKey(f.key), f.key
		}
		return f.path + "[" + strconv.Itoa(f.index) + "]", ""
	}
	advance := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		if f.object {
			f.wantKey = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			if err != io.EOF {
				s.scalarText(p, string(data))
			}
			return
		}
		if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				advance()
				continue
			}
			k, _ := tok.(string)
			stack[len(stack)-1].key = k
			stack[len(stack)-1].wantKey = false
			s.scalarText(p.at(p.where+" "+stack[len(stack)-1].path+" (key)"), k)
			continue
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				pth, _ := path()
				stack = append(stack, frame{object: t == '{', path: pth, wantKey: t == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				advance()
			}
		case string:
			pth, key := path()
			s.jsonString(p.at(p.where+" "+pth), key, t, depth)
			advance()
		default:
			advance()
		}
	}
}

// jsonString scans one JSON string value under field key.
func (s *scanner) jsonString(p place, key, v string, depth int) {
	named := textMatches(v)
	for _, m := range named {
		s.report(p, m.rule, m.value)
	}
	if len(named) > 0 {
		return
	}
	if depth < maxDepth && len(v) > 1 {
		switch {
		case v[0] == '{' || v[0] == '[':
			if json.Valid([]byte(v)) {
				s.json(p, []byte(v), "(json)", depth+1)
				return
			}
		case strings.HasPrefix(v, "eyJ"):
			if b, err := base64.StdEncoding.DecodeString(v); err == nil && json.Valid(b) {
				s.json(p, b, "(base64)", depth+1)
				return
			}
		}
	}
	switch {
	case secretField(key):
		if !placeholder(v) && credentialish(v) {
			s.report(p, RuleSecretField, v)
		}
	case !payloadFields[strings.ToLower(key)] && !idName(key) && highEntropy(v):
		s.report(p, RuleEntropy, v)
	}
}
