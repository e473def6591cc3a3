package wire

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/openmax/openmax/internal/rapidchecks"
)

func readAll(t *testing.T, in string, max int) []string {
	t.Helper()
	lr := NewLineReader(strings.NewReader(in), max)
	var out []string
	for {
		line, err := lr.Next()
		var tl *LineTooLongError
		switch {
		case errors.Is(err, io.EOF):
			return out
		case errors.As(err, &tl):
			out = append(out, "TOO LONG "+itoa(tl.Size))
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, string(line))
		}
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestLineReader(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want []string
	}{
		{"a\nb\n", 8, []string{"a", "b"}},
		{"a\r\nb", 8, []string{"a", "b"}},
		{"\n\n", 8, []string{"", ""}},
		{"12345678\n123456789\nok\n", 8, []string{"12345678", "TOO LONG 9", "ok"}},
		{"123456789", 8, []string{"TOO LONG 9"}},
		{"", 8, nil},
		// The CR of a CRLF ending does not count toward the cap.
		{"12345678\r\nok\r\n", 8, []string{"12345678", "ok"}},
		{"123456789\r\nok", 8, []string{"TOO LONG 9", "ok"}},
		{"1234567\r\r\n", 8, []string{"1234567\r"}},
		{"12345678\r\r\n", 8, []string{"TOO LONG 9"}},
		{"12345678\r", 8, []string{"12345678"}},
	}
	for _, tt := range tests {
		if got := readAll(t, tt.in, tt.max); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%q: got %q want %q", tt.in, got, tt.want)
		}
	}
	// Lines longer than the internal buffer are assembled whole.
	long := strings.Repeat("x", 200_000)
	if got := readAll(t, long+"\n"+long+"y\n", 200_000); len(got) != 2 || got[0] != long || got[1] != "TOO LONG 200001" {
		t.Errorf("long lines: %d lines, second %.20q", len(got), got[len(got)-1])
	}
}

// endless yields n bytes of 'a' and then a tail, without ever holding them.
type endless struct {
	n    int64
	tail string
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n > 0 {
		k := int64(len(p))
		if k > e.n {
			k = e.n
		}
		for i := range p[:k] {
			p[i] = 'a'
		}
		e.n -= k
		return int(k), nil
	}
	if e.tail == "" {
		return 0, io.EOF
	}
	k := copy(p, e.tail)
	e.tail = e.tail[k:]
	return k, nil
}

// TestHeavyLineReaderMemoryIsBoundedByTheCap drops a 256 MiB line while
// allocating no more than about the 8 MiB cap's worth, then reads on.
func TestHeavyLineReaderMemoryIsBoundedByTheCap(t *testing.T) {
	rapidchecks.HeavyUnderRace(t)
	const size = 256 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lr := NewLineReader(&endless{n: size, tail: "\n{\"cmd\":\"quit\"}\n"}, MaxLine)
	_, err := lr.Next()
	runtime.ReadMemStats(&after)
	var tl *LineTooLongError
	if !errors.As(err, &tl) || tl.Size != size {
		t.Fatalf("got %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*MaxLine {
		t.Errorf("allocated %d MiB to skip a %d MiB line", alloc>>20, size>>20)
	}
	t.Logf("allocated %d MiB to skip a %d MiB line", (after.TotalAlloc-before.TotalAlloc)>>20, size>>20)
	if line, err := lr.Next(); err != nil || string(line) != `{"cmd":"quit"}` {
		t.Errorf("after the long line: %q, %v", line, err)
	}
}

// TestCheckStreamSkipsOverlongLines: a stdout line past the checker's cap is
// one violation, read without being held, and checking goes on after it.
func TestCheckStreamSkipsOverlongLines(t *testing.T) {
	in := io.MultiReader(strings.NewReader(hello+"\n"), &endless{n: MaxCheckedLine + 1, tail: "\n" + budget + "\n" + done("stop") + "\n"})
	var verdicts []string
	bad, err := CheckStreamStrict(in, func(v Verdict) {
		s := "ok"
		if v.Err != nil {
			s = v.Err.Error()
		}
		verdicts = append(verdicts, itoa(int64(v.Line))+": "+s)
	})
	if err != nil || bad != 1 {
		t.Fatalf("bad=%d err=%v %q", bad, err, verdicts)
	}
	want := []string{"1: ok", "2: 67108865 bytes: longer than the checker reads (64 MiB)", "3: ok", "4: ok"}
	if strings.Join(verdicts, "|") != strings.Join(want, "|") {
		t.Errorf("verdicts %q", verdicts)
	}
}

func TestIsBlank(t *testing.T) {
	for _, tt := range []struct {
		in    string
		blank bool
	}{
		{"", true}, {" \t\r", true}, {"\v", false}, {"\f", false},
		{"\u00a0", false}, {"\u2028", false}, {"\u3000", false}, {" {} ", false},
	} {
		if got := IsBlank([]byte(tt.in)); got != tt.blank {
			t.Errorf("IsBlank(%q) = %v, want %v", tt.in, got, tt.blank)
		}
	}
}
