package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/openmax/openmax/internal/jsonstr"
	"pgregory.net/rapid"
)

// referenceAppendEvent is AppendEvent as it was before the fast path:
// json.Marshal for session_id and type, encoding/json for the fields.
func referenceAppendEvent(t *rapid.T, sessionID string, e Event) []byte {
	sid, err1 := json.Marshal(sessionID)
	typ, err2 := json.Marshal(e.EventType())
	if err1 != nil || err2 != nil {
		t.Fatalf("json.Marshal: %v, %v", err1, err2)
	}
	dst := append([]byte(`{"session_id":`), sid...)
	dst = append(append(dst, `,"type":`...), typ...)
	out, err := appendFieldsReflect(dst, e)
	if err != nil {
		t.Fatalf("appendFieldsReflect(%#v): %v", e, err)
	}
	return out
}

// stringFragments are the pieces whose JSON encoding has a rule of its
// own: quotes, backslashes, every kind of control character, the HTML
// characters, DEL, multi-byte runes, U+2028/U+2029, U+FFFD itself, and
// invalid or truncated UTF-8.
var stringFragments = []string{
	"a", "Z", " ", "0", "~", "\"", "\\", "/", "<", ">", "&", "\x7f",
	"\x00", "\x01", "\x08", "\t", "\n", "\x0b", "\x0c", "\r", "\x1b", "\x1f",
	"é", "日本", "\U0001F600", "\u2028", "\u2029", "\u2027", "\ufffd",
	"\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf",
}

// wireString draws a string that mixes the fragments with arbitrary
// runes and arbitrary bytes.
func wireString(t *rapid.T, label string) string {
	parts := rapid.SliceOfN(rapid.OneOf(
		rapid.SampledFrom(stringFragments),
		rapid.String(),
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 8), func(b []byte) string { return string(b) }),
	), 0, 12).Draw(t, label)
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p)
	}
	return b.String()
}

// randomValue fills a value of type typ (a Def's Go type) field by field.
func randomValue(t *rapid.T, typ reflect.Type) any {
	v := reflect.New(typ).Elem()
	for i := range typ.NumField() {
		f := v.Field(i)
		name := typ.Name() + "." + typ.Field(i).Name
		switch {
		case f.Kind() == reflect.String:
			f.SetString(wireString(t, name))
		case f.Kind() == reflect.Int:
			f.SetInt(int64(rapid.OneOf(rapid.IntRange(-2, 1000), rapid.Int()).Draw(t, name)))
		case f.Kind() == reflect.Bool:
			f.SetBool(rapid.Bool().Draw(t, name))
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Int:
			if rapid.Bool().Draw(t, name+"!=nil") {
				n := rapid.Int().Draw(t, name)
				f.Set(reflect.ValueOf(&n))
			}
		default:
			// Arrays and objects: the types holding them have no plan,
			// and their zero value still encodes (withDefaults).
		}
	}
	return v.Interface()
}

func scalarOnly(d *Def) bool {
	for _, f := range d.Fields {
		if f.Kind == KindArray || f.Kind == KindObject {
			return false
		}
	}
	return true
}

// TestFastPathCoversEveryScalarDef: every event and line whose fields are
// all scalars has a plan (so none falls back to encoding/json unnoticed),
// and the per-token events are among them.
func TestFastPathCoversEveryScalarDef(t *testing.T) {
	for _, defs := range [][]*Def{Events, Lines} {
		for _, d := range defs {
			has := planFor(reflect.TypeOf(d.Proto)) != nil
			if want := scalarOnly(d); has != want {
				t.Errorf("%s: has a plan %v, want %v (all fields scalar: %v)", d.Name, has, want, want)
			}
		}
	}
	for _, e := range []Event{Token{}, Thinking{}, MessageDone{}, Done{}} {
		if planFor(reflect.TypeOf(e)) == nil {
			t.Errorf("%s has no plan: every token would go through encoding/json", e.EventType())
		}
	}
	if ps := textPlans(); ps.token == nil || ps.thinking == nil || ps.messageDone == nil {
		t.Errorf("text events without their direct path: %+v", ps)
	}
}

// TestFastPathMatchesEncodingJSON: for random values of every event and
// line, and random session ids, the emitted line is byte for byte the one
// encoding/json writes.
func TestFastPathMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sid := wireString(t, "session_id")
		d := rapid.SampledFrom(append(append([]*Def{}, Events...), Lines...)).Draw(t, "def")
		v := randomValue(t, reflect.TypeOf(d.Proto))
		if d.Role == RoleEvent {
			got, err := AppendEvent(nil, sid, v.(Event))
			if err != nil {
				t.Fatal(err)
			}
			want := referenceAppendEvent(t, sid, v.(Event))
			if !bytes.Equal(got, want) {
				t.Fatalf("%#v:\n got %q\nwant %q", v, got, want)
			}
			var lines lineRecorder
			if err := NewWriter(&lines, sid).Event(v.(Event)); err != nil {
				t.Fatal(err)
			}
			if lines.got[0]+"\n" != string(want) {
				t.Fatalf("Writer.Event(%#v):\n got %q\nwant %q", v, lines.got[0], want)
			}
			return
		}
		prefix := []byte(`{"type":"` + d.Name + `"`)
		got, err := AppendLine(nil, v.(Line))
		if err != nil {
			t.Fatal(err)
		}
		want, err := appendFieldsReflect(prefix, v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%#v:\n got %q\nwant %q", v, got, want)
		}
	})
}

// TestAppendQuotedMatchesMarshal: appendQuoted with html set is
// json.Marshal of a string, and without it an Encoder with
// SetEscapeHTML(false).
func TestAppendQuotedMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := wireString(t, "s")
		want, _ := json.Marshal(s)
		if got := appendQuoted(nil, s, true); !bytes.Equal(got, want) {
			t.Fatalf("html: %q: got %q want %q", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := appendQuoted(nil, s, false); !bytes.Equal(got, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) {
			t.Fatalf("no html: %q: got %q want %q", s, got, buf.Bytes())
		}
	})
}

// TestAppendEventTokenAllocatesNothing: a token line is encoded into a
// buffer that already has room without any allocation.
func TestAppendEventTokenAllocatesNothing(t *testing.T) {
	var e Event = Token{Text: "a \"quoted\" <piece>\n of text é"}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		buf, _ = AppendEvent(buf[:0], "s-0123456789abcdef", e)
	})
	if allocs != 0 {
		t.Errorf("AppendEvent(token) made %v allocations, want 0", allocs)
	}
}

// pieceRecorder is a LineWriter that also takes lines in pieces
// (PieceWriter), keeping each line joined and how many pieces it came in.
type pieceRecorder struct {
	lineRecorder
	pieces []int
}

func (r *pieceRecorder) WriteLinePieces(pieces [][]byte) error {
	r.pieces = append(r.pieces, len(pieces))
	return r.WriteLine(bytes.Join(pieces, nil))
}

// TestWriterTextFastPaths: Writer.Token writes the line Event writes for
// the Token, and a MessageDoneQuoted whose text was encoded in pieces cut
// anywhere (a jsonstr.Escaper fed the text in chunks, as the engine does)
// is written as the line of MessageDone{Text: text}, whether its
// LineWriter takes lines whole or in pieces; only the second gets pieces.
func TestWriterTextFastPaths(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := wireString(t, "text")
		cuts := rapid.SliceOfN(rapid.IntRange(0, len(text)), 0, 6).Draw(t, "cuts")
		slices.Sort(cuts)
		var esc jsonstr.Escaper
		var pieces [][]byte
		at := 0
		for _, c := range append(cuts, len(text)) {
			pieces = append(pieces, esc.Append(nil, text[at:c]))
			at = c
		}
		pieces[len(pieces)-1] = esc.Flush(pieces[len(pieces)-1])
		want, _ := AppendEvent(nil, "s-1", MessageDone{Text: text})
		wantTok, _ := AppendEvent(nil, "s-1", Token{Text: text})

		var whole lineRecorder
		var split pieceRecorder
		for _, lw := range []LineWriter{&whole, &split} {
			w := NewWriter(lw, "s-1")
			if err := w.Token(text); err != nil {
				t.Fatal(err)
			}
			if err := w.Event(MessageDoneQuoted(text, pieces...)); err != nil {
				t.Fatal(err)
			}
		}
		for name, got := range map[string][]string{"whole": whole.got, "pieces": split.got} {
			if len(got) != 2 || got[0] != string(wantTok[:len(wantTok)-1]) || got[1] != string(want[:len(want)-1]) {
				t.Fatalf("%s: lines %q, want %q and %q", name, got, wantTok, want)
			}
		}
		if wantPieces := len(pieces) > 1; (len(split.pieces) == 1) != wantPieces {
			t.Fatalf("%d pieces encoded: the PieceWriter took %v lines in pieces", len(pieces), split.pieces)
		}
	})
}
