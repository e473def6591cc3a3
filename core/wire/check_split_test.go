package wire

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openmax/openmax/internal/rapidchecks"
	"pgregory.net/rapid"
)

// TestLineSplitterEqualsLineReader: the checker's splitter cuts any input
// into the lines LineReader cuts (same bytes, same over-long sizes, same
// end), whether a line is checked in place, gathered in memory or spilled
// to a file. Tiny buffers make every path common.
func TestLineSplitterEqualsLineReader(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(0, 40).Draw(t, "max")
		inMemory := rapid.IntRange(0, 30).Draw(t, "inMemory")
		var in []byte
		for range rapid.IntRange(0, 6).Draw(t, "lines") {
			// Lengths around the cap and the in-memory part are the edges.
			n := rapid.SampledFrom([]int{max, max + 1, max + 2, inMemory - 1, inMemory, inMemory + 1, 17, 40, 60}).Draw(t, "n")
			if n < 0 {
				n = 0
			}
			line := rapid.SliceOfN(rapid.SampledFrom([]byte("ab{}\"\r")), n, n).Draw(t, "line")
			in = append(in, line...)
			in = append(in, rapid.SampledFrom([]string{"\n", "\r\n", "\r\r\n", ""}).Draw(t, "end")...)
		}
		oneByte := rapid.Bool().Draw(t, "oneByteReads")
		var r1, r2 io.Reader = bytes.NewReader(in), bytes.NewReader(in)
		if oneByte {
			r1, r2 = iotest.OneByteReader(r1), iotest.OneByteReader(r2)
		}
		ref := NewLineReader(r1, max)
		sp := newLineSplitter(r2, int64(max), inMemory, 16) // bufio's smallest buffer
		defer sp.close()
		for i := 0; ; i++ {
			want, wantErr := ref.Next()
			got, size, err := sp.next()
			var tl *LineTooLongError
			switch {
			case errors.As(wantErr, &tl):
				if !errors.Is(err, errLineTooLong) || size != tl.Size {
					t.Fatalf("line %d: want too long (%d bytes), got %q %d %v", i, tl.Size, got, size, err)
				}
			case wantErr != nil:
				if !errors.Is(err, wantErr) {
					t.Fatalf("line %d: want %v, got %q %v", i, wantErr, got, err)
				}
				return
			default:
				if err != nil || string(got) != string(want) || size != int64(len(want)) {
					t.Fatalf("line %d: want %q, got %q (%d) %v", i, want, got, size, err)
				}
			}
		}
	})
}

// TestHeavyCheckStreamMemoryOnAHugeLine: a 256 MiB line (past the 64 MiB the
// checker reads) costs about the 1 MiB held in memory, not the 64 MiB cap;
// it is one violation, the lines after it are still checked, and the spill
// file is gone afterwards.
func TestHeavyCheckStreamMemoryOnAHugeLine(t *testing.T) {
	rapidchecks.HeavyUnderRace(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const size = 256 << 20
	in := io.MultiReader(strings.NewReader(hello+"\n"), &endless{n: size, tail: "\n" + budget + "\n" + tok("x") + "\n" + msgDone("y") + "\n" + done("stop") + "\n"})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var verdicts []string
	bad, err := CheckStreamStrict(in, func(v Verdict) { verdicts = append(verdicts, string(v.AppendLine(nil))) })
	runtime.ReadMemStats(&after)
	if err != nil || bad != 3 {
		t.Fatalf("bad=%d err=%v %q", bad, err, verdicts)
	}
	want := []string{"1: ok", "2: 268435456 bytes: longer than the checker reads (64 MiB)", "3: ok", "4: ok",
		"5: message_done: text differs from the run of tokens it closes (line 4 on)",
		"6: done: the run of tokens from line 4 was never closed by message_done or error"}
	if strings.Join(verdicts, "|") != strings.Join(want, "|") {
		t.Errorf("verdicts %q", verdicts)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > 4*heldLine {
		t.Errorf("allocated %d MiB to check past a %d MiB line", alloc>>20, size>>20)
	}
	t.Logf("allocated %.1f MiB to check past a %d MiB line", float64(alloc)/(1<<20), size>>20)
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
}

// TestHeavyCheckStreamChecksLongLinesWhole: lines longer than the 1 MiB held in
// memory but within the 64 MiB cap are still checked whole, with the
// verdict the two-pass checker gives the same bytes.
func TestHeavyCheckStreamChecksLongLinesWhole(t *testing.T) {
	rapidchecks.HeavyUnderRace(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	big := strings.Repeat(`tab\t quote\" é `, (10<<20)/16)
	long := ev("tool_end", `"call_id":"c","ok":true,"output":"`+big+`"`)
	badLong := ev("tool_end", `"call_id":"c","ok":true,"output":"`+big+`","extra":[`)
	lines := []string{hello, budget, tStart("c"), long, tStart("d"), badLong + "\r", tEnd("d"), done("stop")}
	in := strings.Join(lines, "\n") + "\n"

	oracle := NewChecker(Strict())
	oracle.twoPass = true
	var want []string
	for _, l := range lines {
		want = append(want, verdict(oracle.Line([]byte(strings.TrimSuffix(l, "\r")))))
	}
	var got []string
	_, err := CheckStreamStrict(strings.NewReader(in), func(v Verdict) { got = append(got, verdict(v.Err)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(lines) || got[3] != "ok" || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
}

// TestCheckStreamWithoutTempDir: when no spill file can be made, long lines
// are held in memory and checked as before.
func TestCheckStreamWithoutTempDir(t *testing.T) {
	t.Setenv("TMPDIR", "/nonexistent/openmax-check")
	long := ev("tool_end", `"call_id":"c","ok":true,"output":"`+strings.Repeat("x", 3*heldLine)+`"`)
	in := strings.Join([]string{hello, budget, tStart("c"), long, done("stop")}, "\n")
	var got []string
	bad, err := CheckStreamStrict(strings.NewReader(in), func(v Verdict) { got = append(got, string(v.AppendLine(nil))) })
	if err != nil || bad != 0 {
		t.Fatalf("bad=%d err=%v %q", bad, err, got)
	}
}

func TestVerdictAppendLine(t *testing.T) {
	for _, tt := range []struct {
		v    Verdict
		want string
	}{
		{Verdict{Line: 7}, "7: ok"},
		{Verdict{Line: 12, Err: errors.New("token: boom")}, "12: token: boom"},
		{Verdict{Err: errors.New("no hello: the stream is empty")}, "end: no hello: the stream is empty"},
		{Verdict{}, "end: <nil>"},
	} {
		if got := string(tt.v.AppendLine([]byte("x"))); got != "x"+tt.want {
			t.Errorf("%+v: %q, want %q", tt.v, got, tt.want)
		}
	}
}

// TestAppendLineNumber: the in-place digits are strconv's.
func TestAppendLineNumber(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.OneOf(rapid.IntRange(-1000, 1000), rapid.Int(), rapid.SampledFrom([]int{0, 9, 10, 99, 100, 999, 1000, 9999, 10000, math.MaxInt, math.MinInt})).Draw(t, "n")
		prefix := []byte(rapid.SampledFrom([]string{"", "x", "line "}).Draw(t, "prefix"))
		if got, want := string(appendLineNumber(prefix, n)), string(prefix)+strconv.Itoa(n); got != want {
			t.Fatalf("%d: %q, want %q", n, got, want)
		}
	})
}
