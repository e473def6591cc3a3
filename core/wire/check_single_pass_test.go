package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// The single-pass checker must say exactly what the two-pass one said. The
// two-pass reading is kept as Checker.twoPass (json.Valid then a split,
// checkFields, every string decoded with encoding/json); these properties
// run both over the same random lines, valid and broken.

// jsonStrings are string literals as they appear on the wire: plain,
// escaped, spelled in \u escapes, surrogate pairs, lone surrogates, raw
// non-ASCII, empty.
var jsonStrings = []string{
	`""`, `"a"`, `"ab"`, `"A"`, `"\u0041"`, `"a\"b"`, `"a\\b"`, `"\n"`, `"\/"`, `"\b\f\r\t"`,
	`"日本語"`, `"\u65e5本"`, `"🚀"`, `"\ud83d\ude80"`, `"\ud83d"`, `"\ude80x"`, `"\ud83d\u0041"`,
	`"\u00e9"`, `"é"`, `"s"`, `"t"`, `"c1"`, `"a1"`, `"stop"`, `"error"`, `"truncated"`,
	`"refused"`, `"cancelled"`, `"gate"`, `"approved"`, `"user"`, `"ask"`, `"line 1: bad"`,
	`"\u0000"`, `" "`, `"x y "`,
}

var jsonOthers = []string{
	`0`, `1`, `2`, `3`, `42`, `-1`, `1.5`, `1e3`, `-0`, `12345678901234567890`, `true`, `false`,
	`null`, `{}`, `[]`, `{"a":1}`, `["x"]`, `[{"role":"user","content":"hi"}]`,
	`[{"role":"bot","content":"hi"}]`, `{"path":"x","n":[1,2,{"d":null}]}`, `[1]`,
}

// genValue draws a value for f: usually of its kind, sometimes anything.
func genValue(t *rapid.T, f *Field) string {
	if rapid.IntRange(0, 9).Draw(t, "odd") == 0 {
		return rapid.SampledFrom(append(slices.Clone(jsonStrings), jsonOthers...)).Draw(t, "any")
	}
	switch f.Kind {
	case KindString:
		if f.Enum != nil && rapid.Bool().Draw(t, "enum") {
			return `"` + rapid.SampledFrom(f.Enum).Draw(t, "e") + `"`
		}
		return rapid.SampledFrom(jsonStrings).Draw(t, "s")
	case KindInteger:
		return rapid.SampledFrom([]string{`0`, `1`, `2`, `3`, `7`, `42`, `-1`, `1.5`, `null`}).Draw(t, "i")
	case KindBoolean:
		return rapid.SampledFrom([]string{`true`, `false`}).Draw(t, "b")
	case KindArray:
		if f.Items.Kind == KindObject {
			return rapid.SampledFrom([]string{`[]`, `[{"role":"user","content":"hi"}]`,
				`[{"role":"assistant","content":"\u00e9"},{"role":"user","content":""}]`,
				`[{"role":"bot","content":"x"}]`, `[{"role":"user"}]`}).Draw(t, "objs")
		}
		return rapid.SampledFrom([]string{`[]`, `["a"]`, `["a","\u0062"]`, `[1]`}).Draw(t, "arr")
	default:
		return rapid.SampledFrom([]string{`{}`, `{"a":[1,2]}`, `{"p":"\"q\""}`}).Draw(t, "obj")
	}
}

var allTypes = func() []string {
	var out []string
	for _, d := range Events {
		out = append(out, d.Name)
	}
	for _, d := range Lines {
		out = append(out, d.Name)
	}
	return append(out, "tokens", `\u0074oken`)
}()

// genLine draws one stdout line: a random type (token-heavy, so runs and
// their message_done come up), its fields, session_id, whitespace, and
// sometimes a mutation that breaks it.
func genLine(t *rapid.T, run *[]string) string {
	typ := rapid.SampledFrom(append([]string{"token", "token", "message_done", "budget", "done", "done"}, allTypes...)).Draw(t, "type")
	var members []string
	ws := func() string { return rapid.SampledFrom([]string{"", "", "", " ", "\t", " \r "}).Draw(t, "ws") }
	add := func(k, v string) { members = append(members, ws()+k+ws()+":"+ws()+v+ws()) }
	add(`"type"`, `"`+typ+`"`)
	if rapid.IntRange(0, 7).Draw(t, "sid") != 0 {
		add(`"session_id"`, rapid.SampledFrom([]string{`"s"`, `"s"`, `"\u0073"`, `"t"`, `""`, `1`}).Draw(t, "sidv"))
	}
	d, ok := EventDef(typ)
	if !ok {
		d, ok = LineDef(typ)
	}
	if ok {
		for i := range d.Fields {
			f := &d.Fields[i]
			if rapid.IntRange(0, 15).Draw(t, "omit") == 0 {
				continue
			}
			v := genValue(t, f)
			switch {
			case typ == "token" && f.Name == "text":
				*run = append(*run, v)
			case typ == "message_done" && f.Name == "text" && rapid.IntRange(0, 3).Draw(t, "match") != 0:
				// The run's text, spelled as one string: raw where it can be.
				var sb strings.Builder
				for _, s := range *run {
					var x string
					if json.Unmarshal([]byte(s), &x) == nil {
						sb.WriteString(x)
					}
				}
				b, _ := json.Marshal(sb.String())
				v = string(b)
				*run = nil
			}
			if f.Name == "stop_reason" || f.Name == "message" {
				v = rapid.SampledFrom([]string{`"stop"`, `"error"`, `"truncated"`, `"refused"`, `"line 2: x"`, v}).Draw(t, "special")
			}
			add(`"`+f.Name+`"`, v)
		}
	}
	switch rapid.IntRange(0, 20).Draw(t, "extra") {
	case 0:
		add(`"zz"`, `1`)
	case 1:
		add(`"type"`, `"token"`) // a duplicate key
	case 2:
		add(`"t\u0079pe"`, `"x"`) // a duplicate spelled with an escape
	}
	if len(members) > 1 && rapid.IntRange(0, 6).Draw(t, "shuffle") == 0 {
		i := rapid.IntRange(0, len(members)-1).Draw(t, "i")
		members[0], members[i] = members[i], members[0]
	}
	line := []byte(ws() + "{" + strings.Join(members, ",") + "}" + ws())
	if len(members) == 0 {
		line = []byte("{}")
	}
	for range rapid.IntRange(0, 2).Draw(t, "mutations") {
		line = mutate(t, line)
	}
	return string(line)
}

func mutate(t *rapid.T, line []byte) []byte {
	if len(line) == 0 {
		return line
	}
	i := rapid.IntRange(0, len(line)-1).Draw(t, "at")
	b := rapid.SampledFrom([]byte("{}[]\":,\\ ux0-.e\x01\xff\xc3\x80tfn")).Draw(t, "byte")
	switch rapid.IntRange(0, 4).Draw(t, "op") {
	case 0:
		return slices.Insert(slices.Clone(line), i, b)
	case 1:
		return slices.Delete(slices.Clone(line), i, i+1)
	case 2:
		l := slices.Clone(line)
		l[i] = b
		return l
	case 3:
		return line[:i]
	default:
		return append(slices.Clone(line), line[i:]...)
	}
}

func verdict(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func TestSinglePassVerdictsEqualTwoPass(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var opts []CheckOption
		if rapid.Bool().Draw(t, "strict") {
			opts = append(opts, Strict())
		}
		one, two := NewChecker(opts...), NewChecker(opts...)
		two.twoPass = true
		var run []string
		lines := []string{hello}
		if rapid.IntRange(0, 9).Draw(t, "nohello") == 0 {
			lines = nil
		}
		for range rapid.IntRange(0, 40).Draw(t, "n") {
			if rapid.IntRange(0, 5).Draw(t, "fixed") == 0 {
				lines = append(lines, rapid.SampledFrom([]string{budget, done("stop"), perr, errLine, tStart("c1"), tEnd("c1")}).Draw(t, "fixedline"))
				continue
			}
			lines = append(lines, genLine(t, &run))
		}
		if rapid.Bool().Draw(t, "input") {
			in := `{"cmd":"user","text":"a"}` + "\n" + `{"cmd":"user","text":"b"}` + "\n" + `{"cmd":"quit"}` + "\n"
			one.SetInput([]byte(in))
			two.SetInput([]byte(in))
		}
		for i, l := range lines {
			got, want := verdict(one.Line([]byte(l))), verdict(two.Line([]byte(l)))
			if got != want {
				t.Fatalf("line %d %q:\nsingle pass: %s\ntwo passes:  %s", i+1, l, got, want)
			}
		}
		if got, want := verdict(one.End()), verdict(two.End()); got != want {
			t.Fatalf("end:\nsingle pass: %s\ntwo passes:  %s", got, want)
		}
	})
}

// TestParseObjectEqualsTwoPass: for any line, the single-pass parseObject
// returns the members, or the error, that the two-pass reading returns
// (DecodeCommand shares it, so commands are drawn too).
func TestParseObjectEqualsTwoPass(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var line []byte
		switch rapid.IntRange(0, 4).Draw(t, "kind") {
		case 4: // a string with good and bad escapes, control and non-ASCII bytes
			parts := rapid.SliceOfN(rapid.SampledFrom([]string{`a`, `\x`, `\u12g4`, `\u12`, `\u00e9`,
				`\"`, `\`, `\/`, "\x01", "\x7f", "\xff", `é`, `\U0041`, `\'`, `\0`}), 0, 6).Draw(t, "parts")
			line = []byte(`{"a":"` + strings.Join(parts, "") + `","b":1}`)
		case 0:
			line = []byte(rapid.SampledFrom([]string{`{"cmd":"user","text":"hi"}`, `{"cmd":"quit"}`,
				`{"cmd":"approve","approval_id":"a","approved":true}`, `{"cmd":"mode","mode":"ask"}`,
				`[1]`, `"x"`, `  `, ``, `{"a":{"b":[1,{"c":"\u00e9"}]},"d":-0.5e+7}`}).Draw(t, "cmd"))
			for range rapid.IntRange(0, 3).Draw(t, "mutations") {
				line = mutate(t, line)
			}
		case 1:
			line = rapid.SliceOfN(rapid.SampledFrom([]byte("{}[]\":,\\ a1-.eE+tfnrul0\t")), 0, 30).Draw(t, "bytes")
		default:
			var run []string
			line = []byte(genLine(t, &run))
		}
		got, gotErr := parseObject(line)
		want, wantErr := parseObjectTwoPass(line)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%q: single pass error %v, two passes %v", line, gotErr, wantErr)
		}
		if gotErr == nil && !sameMembers(got, want) {
			t.Fatalf("%q: single pass %s, two passes %s", line, got, want)
		}
		for _, m := range got {
			if _, ok := plainString(m.raw, false); m.plain && !ok {
				t.Fatalf("%q: member %q marked plain", line, m.raw)
			}
		}
		// And the single pass really is the path for well-formed objects.
		if _, ok := splitObject(nil, line); wantErr == nil && !ok {
			t.Fatalf("%q: a well-formed object left to the two-pass path", line)
		}
	})
}

func sameMembers(a, b object) bool {
	return slices.EqualFunc(a, b, func(x, y member) bool {
		return bytes.Equal(x.key, y.key) && bytes.Equal(x.raw, y.raw)
	})
}

func TestSinglePassDeepNestingFallsBack(t *testing.T) {
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	for _, line := range []string{
		`{"type":"x","a":` + deep + `}`,                       // deeper than the fast path follows: two passes
		`{"type":"x","a":` + strings.Repeat("[", 10001) + `}`, // deeper than encoding/json allows
	} {
		got, gotErr := parseObject([]byte(line))
		want, wantErr := parseObjectTwoPass([]byte(line))
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !sameMembers(got, want) {
			t.Errorf("%.40q…: %v / %v", line, gotErr, wantErr)
		}
	}
}

// TestAppendUnquotedMatchesEncodingJSON: the checker's own decoding of
// escaped strings gives what encoding/json gives, lone surrogates included.
func TestAppendUnquotedMatchesEncodingJSON(t *testing.T) {
	pieces := []string{`a`, `é`, `🚀`, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0041`,
		`\u00e9`, `\ud83d\ude80`, `\ud83d`, `\ude80`, `\uD83D\uDE80`, `\ud83d\u0041`, `\ud83d\ud83d\ude80`, `\uffff`, `\u0000`}
	rapid.Check(t, func(t *rapid.T) {
		raw := `"` + strings.Join(rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 8).Draw(t, "pieces"), "") + `"`
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if got := appendUnquoted(nil, []byte(raw)); string(got) != want {
			t.Fatalf("%s: got %q, want %q", raw, got, want)
		}
		if !utf8.ValidString(want) {
			t.Fatalf("%s: %q", raw, want)
		}
	})
}

// TestPlainValueOnlyAcceptsLegal: whatever the no-decoding fast path
// accepts, checkValue accepts.
func TestPlainValueOnlyAcceptsLegal(t *testing.T) {
	var fields []Field
	for _, ds := range [][]*Def{Events, Lines, Commands} {
		for _, d := range ds {
			fields = append(fields, d.Fields...)
		}
	}
	fields = append(fields, sessionIDField)
	values := append(slices.Clone(jsonStrings), jsonOthers...)
	for i := range fields {
		for _, v := range values {
			f := fields[i]
			if plainValue(&f, []byte(v), false) {
				if err := checkValue(&f, []byte(v)); err != nil {
					t.Errorf("%s = %s: fast path accepts, checkValue says %v", f.Name, v, err)
				}
			}
		}
	}
}

// TestSplitObjectTakesWellFormedLines: every well-formed object within the
// nesting bound takes the single pass (the two-pass path is for errors).
func TestSplitObjectTakesWellFormedLines(t *testing.T) {
	for _, line := range []string{
		`{}`, ` { } `, `{"a":0}`, `{"a":-0}`, `{"a":-0.0e-0}`, `{"a":1.5E+10}`, `{"a":123456789012345678901234567890}`,
		`{"a":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE80"}`, `{"a":"é🚀\u0000"}`, "{\"a\":\"\xff\"}",
		`{"a":[],"b":{},"c":[{}],"d":{"e":[1,"x",true,false,null]}}`, "{\t\"a\"\r:\n1 }",
		`{"k\u00e9":1,"ké2":2}`,
	} {
		want, err := parseObjectTwoPass([]byte(line))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got, ok := splitObject(nil, []byte(line))
		if !ok || !sameMembers(got, want) {
			t.Errorf("%q: single pass %v %s, two passes %s", line, ok, got, want)
		}
	}
}

// TestSpecial8: the eight-bytes-at-a-time test flags a word exactly when
// one of its bytes ends a plain run of string bytes.
func TestSpecial8(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.OneOf(rapid.Byte(), rapid.SampledFrom([]byte{0, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xff, 0x5b, 0x21, 0x23})), 8, 8).Draw(t, "word")
		want := false
		for _, c := range b {
			want = want || !strPlain[c]
		}
		w := uint64(0)
		for k := 7; k >= 0; k-- {
			w = w<<8 | uint64(b[k])
		}
		if got := special8(w); got != want {
			t.Fatalf("%q: special8 %v, want %v", b, got, want)
		}
	})
}

// String shows the members for test failures.
func (o object) String() string {
	var b strings.Builder
	for i, m := range o {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%q=%s", m.key, m.raw)
	}
	return b.String()
}
