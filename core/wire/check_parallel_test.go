package wire

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

// onlyReader hides a reader's Len, so Stream takes the path a pipe takes.
type onlyReader struct{ io.Reader }

func collect(t interface{ Fatalf(string, ...any) }, check func(func(Verdict)) (int, error)) string {
	var b strings.Builder
	bad, err := check(func(v Verdict) { b.Write(v.AppendLine(nil)); b.WriteByte('\n') })
	fmt.Fprintf(&b, "bad=%d err=%v\n", bad, err)
	return b.String()
}

// TestParallelStreamMatchesSerialRapid: the parallel stream check reports,
// line for line, what the serial one does, however the pipeline is sized
// (tiny batches, tiny read buffers so long lines take the held and the
// spilled paths, one or several workers) and whatever the stream holds:
// valid and broken lines, CRLF endings, a last line without a newline.
func TestParallelStreamMatchesSerialRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		strict := rapid.Bool().Draw(t, "strict")
		var run []string
		var in bytes.Buffer
		if rapid.IntRange(0, 9).Draw(t, "nohello") != 0 {
			in.WriteString(hello + "\n")
		}
		for range rapid.IntRange(0, 60).Draw(t, "n") {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0:
				in.WriteString(rapid.SampledFrom([]string{budget, done("stop"), perr, errLine, tStart("c1"), tEnd("c1")}).Draw(t, "fixed"))
			case 1: // a long token line
				in.WriteString(`{"session_id":"s","type":"token","text":"` + strings.Repeat("x", rapid.IntRange(1, 1200).Draw(t, "long")) + `"}`)
			default:
				in.WriteString(genLine(t, &run))
			}
			in.WriteString(rapid.SampledFrom([]string{"\n", "\n", "\n", "\r\n"}).Draw(t, "eol"))
		}
		data := in.Bytes()
		if rapid.Bool().Draw(t, "cut") && len(data) > 0 && data[len(data)-1] == '\n' {
			data = data[:len(data)-1]
		}
		var input []byte
		if rapid.Bool().Draw(t, "input") {
			input = []byte(`{"cmd":"user","text":"a"}` + "\n" + `{"cmd":"quit"}` + "\n")
		}
		cfg := parallelConfig{
			workers:    rapid.IntRange(1, 4).Draw(t, "workers"),
			batches:    rapid.IntRange(1, 4).Draw(t, "batches"),
			batchLines: rapid.IntRange(1, 8).Draw(t, "batchLines"),
			batchBytes: rapid.IntRange(1, 600).Draw(t, "batchBytes"),
			blockMax:   rapid.IntRange(1, 1200).Draw(t, "blockMax"),
			readBuf:    rapid.IntRange(16, 512).Draw(t, "readBuf"),
			inMemory:   rapid.IntRange(1, 256).Draw(t, "inMemory"),
			longest:    int64(rapid.IntRange(100, 1000).Draw(t, "longest")),
		}
		newChecker := func() *Checker {
			c := NewChecker()
			c.strict = strict
			if input != nil {
				c.SetInput(input)
			}
			return c
		}
		want := collect(t, func(f func(Verdict)) (int, error) {
			return newChecker().streamSerial(bytes.NewReader(data), f, cfg)
		})
		r := io.Reader(onlyReader{bytes.NewReader(data)})
		if rapid.Bool().Draw(t, "halves") {
			r = iotest.HalfReader(r)
		}
		got := collect(t, func(f func(Verdict)) (int, error) {
			return newChecker().streamParallel(r, f, cfg)
		})
		if got != want {
			t.Fatalf("config %+v\nparallel:\n%s\nserial:\n%s", cfg, got, want)
		}
	})
}

// TestParallelStreamReadError: a read error after some lines reports those
// lines and then the error, as the serial check does.
func TestParallelStreamReadError(t *testing.T) {
	data := hello + "\n" + budget + "\n"
	r := io.MultiReader(strings.NewReader(data), iotest.ErrReader(fmt.Errorf("disk on fire")))
	got := collect(t, func(f func(Verdict)) (int, error) {
		return NewChecker().streamParallel(r, f, parallelConfig{workers: 2, batchLines: 1})
	})
	r = io.MultiReader(strings.NewReader(data), iotest.ErrReader(fmt.Errorf("disk on fire")))
	want := collect(t, func(f func(Verdict)) (int, error) { return NewChecker().streamSerial(r, f, parallelConfig{}) })
	if got != want || !strings.Contains(got, "disk on fire") {
		t.Fatalf("parallel:\n%s\nserial:\n%s", got, want)
	}
}
