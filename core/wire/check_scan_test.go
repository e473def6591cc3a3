package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// scanPrefixes are line openings as a stream repeats them, and near misses:
// session_id before or after type, white space, an escaped type, an
// unknown type, an escaped key, a non-ASCII prefix, type as the last member.
var scanPrefixes = []string{
	`{"session_id":"s","type":"token",`,
	`{"session_id":"s","type":"token", `,
	`{"type":"token","session_id":"s",`,
	`{"session_id":"s","type":"message_done",`,
	`{"session_id":"s","type":"thinking",`,
	`{"session_id":"s","type":"done",`,
	`{"session_id":"s","type":"budget",`,
	`{"session_id":"s","type":"tool_start",`,
	`{"session_id":"s","type":"tool_end",`,
	`{"session_id":"s","type":"usage",`,
	`{"type":"hello",`,
	`{"type":"protocol_error",`,
	` { "type" : "budget" , "session_id" : "s" ,`,
	`{"session_id":"s","type":"tok\u0065n",`,
	`{"session_id":"s","type":"tokens",`,
	`{"s\u0065ssion_id":"s","type":"token",`,
	`{"session_id":"é","type":"token",`,
	`{"session_id":"s","type":"token"`,
	`{"a":1,"b":2,"c":3,"d":4,"type":"token",`,
	`{"session_id":1,"type":"token",`,
	`{"session_id":"s","type":"approval_request",`,
	`{"type":"protocol_error","session_id":"s",`,
	`{"type":"token",`,
	`{"type":"hello","proto":"openmax-stdio/6",`,
}

// scanTails end the lines: members that fit, broken ones, duplicates,
// escapes, non-ASCII and invalid UTF-8, nesting (deeper than the walk
// follows too), raw newlines and CRs inside an object, junk after it.
var scanTails = []string{
	`"text":"x"}`, `"text":"x y "}`, `"text":"a\"b\\c\u00e9"}`, `"text":"日本語 🚀"}`,
	"\"text\":\"\xff\"}", "\"text\":\"\xc3\"}", `"text":1}`, `"text":null}`, `"text":""}`,
	`"type":"token"}`, `"session_id":"s"}`, `"t\u0079pe":"x"}`, `}`, `"text":"x"} `,
	"\"text\":\"x\"}\r", "\"text\":\"x\"}\r\r", "\"text\":\"x\"\r}", `"text":"x"}}`, `"text":"x"}x`,
	`"zz":null,"text":""}`, `"a":[1,{"b":"c","b":[true,false,-0.5e+3]}],"text":"t"}`,
	`"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, `"a":{"é":"ü"},"text":"q"}`,
	"\"text\":\"a\nb\"}", "\"text\":\n\"a\"}", "\"text\"\t:\t\"a\"\t}", `"text":"a",}`, `"text":"a"`,
	`"text":tru}`, `"text":01}`, `"text":"\x"}`, "\"text\":\"\x01\"}", "\x80}",
	`"stop_reason":"stop"}`, `"stop_reason":"error"}`, `"used_tokens":1,"context_tokens":10}`,
	`"call_id":"c1","name":"n","args":{}}`, `"call_id":"c1","ok":true,"output":"o"}`,
	`"message":"line 1: bad"}`, `"message":"m","session_id":"s"}`, `"message":"m","zz":1}`,
	`"text":"x","zz":1}`, `"text":"x","session_id":1}`, `"text":"x","session_id":""}`,
	`"protocol_version":6,"session_id":"s","version":"0","project":"/p","continued":false}`,
	`"protocol_version":6,"session_id":"s","version":"0","project":"/p","continued":false,"x":1}`,
	`"protocol_version":6,"session_id":"s","version":"0","project":"/p"}`, `"text":"x","session_id":"s"}`, `"text":"\u0078"}`, `"text":"x","text":"y"}`,
	`"approval_id":"a","name":"n","summary":"s","detail":"d","reason":"gate","source_path":"","source_sha":""}`,
	`"approval_id":"a","name":"n","summary":"s","detail":"d","reason":"gate","source_path":"p","source_sha":""}`,
	`"approval_id":"a","name":"n","summary":"s","detail":"d","reason":"unapproved_source","source_path":"p","source_sha":"0123456789ab","env":[]}`, `"proto":"openmax-stdio/6","protocol_version":6,"session_id":"s","version":"0","project":"/p","continued":false}`,
}

// TestScanLineMatchesSerialRapid: a worker that reads blocks in one walk,
// remembering prefixes from block to block, prepares every line exactly
// as the serial check prepares it after cutting the same bytes with the
// splitter: the same type, definition, members and verdict, or the same
// over-long size.
func TestScanLineMatchesSerialRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := NewChecker()
		c.strict = rapid.Bool().Draw(t, "strict")
		longest := int64(rapid.IntRange(8, 400).Draw(t, "longest"))
		// A few prefixes and tails per case, so that pairs repeat: a
		// prefix is remembered from a legal line, then reused.
		prefixes := rapid.SliceOfNDistinct(rapid.SampledFrom(scanPrefixes), 1, 4, rapid.ID).Draw(t, "prefixes")
		tails := rapid.SliceOfNDistinct(rapid.SampledFrom(scanTails), 1, 6, rapid.ID).Draw(t, "tails")
		var blocks [][]byte
		var all []byte
		for range rapid.IntRange(1, 4).Draw(t, "blocks") {
			var block []byte
			for range rapid.IntRange(0, 30).Draw(t, "lines") {
				var line string
				switch rapid.IntRange(0, 5).Draw(t, "kind") {
				case 0:
					var run []string
					line = genLine(t, &run)
				case 1:
					line = string(mutate(t, []byte(rapid.SampledFrom(prefixes).Draw(t, "p")+rapid.SampledFrom(tails).Draw(t, "t"))))
				default:
					line = rapid.SampledFrom(prefixes).Draw(t, "prefix") + rapid.SampledFrom(tails).Draw(t, "tail")
				}
				block = append(block, line...)
				block = append(block, rapid.SampledFrom([]string{"\n", "\n", "\r\n", "\r\r\n", " \n"}).Draw(t, "eol")...)
			}
			blocks = append(blocks, block)
			all = append(all, block...)
		}
		if last := blocks[len(blocks)-1]; len(last) > 0 && rapid.Bool().Draw(t, "cut") {
			blocks[len(blocks)-1] = last[:len(last)-1] // the input's last line has no newline
			all = all[:len(all)-1]
		}

		w := newCheckWorker(c)
		var got []string
		for _, block := range blocks {
			b := &checkBatch{}
			b.reset()
			b.buf, b.block = block, true
			w.prepareBatch(b, longest)
			for i := range b.lines {
				l := &b.lines[i]
				if l.tooLong > 0 {
					got = append(got, fmt.Sprintf("too long %d", l.tooLong))
					continue
				}
				got = append(got, describePrepared(l.typ, l.def, b.members(l, nil), l.err))
			}
		}

		ref := c.forWorker()
		sp := newLineSplitter(bytes.NewReader(all), longest, 1<<20, 1<<16)
		defer sp.close()
		var want, lines []string
		for {
			line, size, err := sp.next()
			if err == errLineTooLong {
				want = append(want, fmt.Sprintf("too long %d", size))
				lines = append(lines, "")
				continue
			}
			if err != nil {
				break
			}
			typ, d, m, perr := ref.prepare(nil, line)
			want = append(want, describePrepared(typ, d, m, perr))
			lines = append(lines, string(line))
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines prepared, the serial check cuts %d:\n%s\n---\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("line %d %q:\nscanned: %s\nserial:  %s", i+1, lines[i], got[i], want[i])
			}
		}
	})
}

func describePrepared(typ string, d *Def, m object, err error) string {
	name := "<nil>"
	if d != nil {
		name = d.Name
	}
	var b strings.Builder
	fmt.Fprintf(&b, "type %q def %s err %v members", typ, name, err)
	for _, mem := range m {
		fmt.Fprintf(&b, " %q=%s plain=%v", mem.key, mem.raw, mem.plain)
	}
	return b.String()
}

// TestSpecial8MaskFirstIsExact: the lowest flag of special8Mask is the
// first byte that ends a plain run of string bytes, and there is a flag
// exactly when special8 says so.
func TestSpecial8MaskFirstIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.OneOf(rapid.Byte(), rapid.SampledFrom([]byte{0, '\n', 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xff, 0x5b, 0x21, 0x23})), 8, 8).Draw(t, "word")
		first := 8
		for k, c := range b {
			if !strPlain[c] {
				first = k
				break
			}
		}
		w := binary.LittleEndian.Uint64(b)
		m := special8Mask(w)
		if got := bits.TrailingZeros64(m) >> 3; got != first {
			t.Fatalf("%q: first special byte %d, mask says %d", b, first, got)
		}
		if (m != 0) != special8(w) {
			t.Fatalf("%q: mask %x, special8 %v", b, m, special8(w))
		}
	})
}

// TestScanLineFastPath: well-formed lines, and a line that repeats a
// remembered prefix, are read by the one walk (not handed back to the
// serial cut), while a newline inside an object is.
func TestScanLineFastPath(t *testing.T) {
	w := newCheckWorker(NewChecker())
	for _, tc := range []struct {
		line string
		fast bool
	}{
		{tok("a") + "\n", true},
		{tok("b") + "\n", true}, // through the prefix of the line before
		{" " + tok("日本") + " \r\n", true},
		{hello + "\n", true},
		{"{\"session_id\":\"s\",\n\"type\":\"token\",\"text\":\"a\"}\n", false},
		{`{"session_id":"s","type":"token","text":"a"` + "\n", false},
	} {
		b := &checkBatch{buf: []byte(tc.line)}
		_, fast := w.scanLine(b, 0, MaxCheckedLine)
		if fast != tc.fast {
			t.Errorf("%q: read by the one walk %v, want %v", tc.line, fast, tc.fast)
		}
	}
	var got []string
	for _, mm := range w.memos {
		got = append(got, string(mm.prefix))
	}
	// The last line matched the first prefix before it broke.
	want := []string{`{"session_id":"s","type":"token","text":`, `{"type":"hello","proto":`, ` {"session_id":"s","type":"token","text":`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("remembered %q, want %q (most recent first)", got, want)
	}
}

// TestScanLineAfterALegalLine: once a legal line has left a prefix,
// every line with that prefix is still prepared as the serial check
// prepares it, whatever follows the prefix (the quick check of the rest
// must never pass what the full one would refuse). Every prefix, every
// legal line for it, every tail, both modes.
func TestScanLineAfterALegalLine(t *testing.T) {
	for _, strict := range []bool{false, true} {
		c := NewChecker()
		c.strict = strict
		ref := c.forWorker()
		w := newCheckWorker(c)
		b := &checkBatch{}
		for _, prefix := range scanPrefixes {
			for _, legal := range scanTails {
				if _, _, _, err := ref.prepare(nil, []byte(prefix+legal)); err != nil {
					continue
				}
				for _, tail := range scanTails {
					line := []byte(prefix + tail)
					if bytes.IndexByte(line, '\n') >= 0 {
						continue // a tail with a newline is two lines; the rapid test has them
					}
					w.memos = w.memos[:0]
					b.reset()
					b.buf = append(append(append(b.buf, prefix+legal...), '\n'), line...)
					b.block = true
					w.prepareBatch(b, MaxCheckedLine)
					l := &b.lines[len(b.lines)-1]
					typ, d, m, err := ref.prepare(nil, bytes.TrimSuffix(line, []byte("\r")))
					got := b.members(l, nil)
					if l.typ != typ || l.def != d || fmt.Sprint(l.err) != fmt.Sprint(err) || !sameMembers(got, m) {
						t.Errorf("strict %v, after %q:\n%q\nscanned: %s\nserial:  %s", strict, prefix+legal, line,
							describePrepared(l.typ, l.def, got, l.err), describePrepared(typ, d, m, err))
					}
				}
			}
		}
	}
}

// TestKeyIs: the byte loop says what == says.
func TestKeyIs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.SliceOfN(rapid.SampledFrom([]byte("ab")), 0, 12).Draw(t, "key")
		p := rapid.SliceOfN(rapid.SampledFrom([]byte("ab")), 0, 12).Draw(t, "name")
		if got, want := keyIs(s, string(p)), string(s) == string(p); got != want {
			t.Fatalf("keyIs(%q, %q) = %v", s, p, got)
		}
	})
}
