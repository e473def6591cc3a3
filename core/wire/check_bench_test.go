package wire_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/openmax/openmax/core/wire"
)

// Benchmarks only (go test -run '^$' -bench CheckStream ./core/wire); the
// inputs are built inside the benchmarks, so plain go test pays nothing.
// bench/run.sh measures the same thing end to end through the binary.

const benchSession = "s-bench0123456789"

// benchStream encodes hello and then realistic turns (budget, thinking, a run
// of tokens and message_done, usage, tool_start/tool_end, a second run,
// usage, done) until at least size bytes. outputBytes sets the size of each
// tool_end output, so long lines can be exercised too.
func benchStream(b *testing.B, size, outputBytes int) []byte {
	b.Helper()
	words := strings.Fields(`The engine streams a reply from the provider, runs the "tool calls" of a
completed reply — feeds their results back and repeats until the model stops 🚀 日本語`)
	const unit = "\tn += len(m.Text) // \"quoted\" C:\\path\n"
	output := strings.Repeat(unit, outputBytes/len(unit)+1)[:outputBytes]
	var buf []byte
	add := func(l []byte, err error) {
		if err != nil {
			b.Fatal(err)
		}
		buf = l
	}
	add(wire.AppendLine(buf, wire.Hello{Proto: wire.Proto, ProtocolVersion: wire.ProtocolVersion,
		SessionID: benchSession, Version: "0.1.0", Project: "/home/dev/src/openmax"}))
	ev := func(e wire.Event) { add(wire.AppendEvent(buf, benchSession, e)) }
	run := func(n, off int) {
		var sb strings.Builder
		for k := range n {
			t := words[(off+k)%len(words)] + " "
			sb.WriteString(t)
			ev(wire.Token{Text: t})
		}
		ev(wire.MessageDone{Text: sb.String()})
	}
	cached := 512
	for i := 0; len(buf) < size; i++ {
		ev(wire.Budget{UsedTokens: 1200 + i, ContextTokens: 200_000})
		for k := range 4 {
			ev(wire.Thinking{Text: words[(i+k)%len(words)] + " "})
		}
		run(24, i)
		ev(wire.Usage{PromptTokens: 1500, CompletionTokens: 42, CachedTokens: &cached})
		id := fmt.Sprintf("call_%d_1", i)
		ev(wire.ToolStart{CallID: id, Name: "read_file", Args: []byte(`{"path":"core/engine.go","limit":40}`)})
		ev(wire.ToolEnd{CallID: id, OK: true, Output: output})
		run(48, i*7)
		ev(wire.Usage{PromptTokens: 2100, CompletionTokens: 96})
		ev(wire.Done{StopReason: "stop"})
	}
	return buf
}

func BenchmarkCheckStream(b *testing.B) {
	for _, c := range []struct {
		name       string
		size, tool int
	}{
		{"turns", 16 << 20, 600},                // mostly short lines, as a chatty session prints
		{"long_tool_output", 16 << 20, 1 << 20}, // one 1 MiB tool_end per turn
	} {
		b.Run(c.name, func(b *testing.B) {
			data := benchStream(b, c.size, c.tool)
			lines := bytes.Count(data, []byte("\n"))
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				bad, err := wire.CheckStream(bytes.NewReader(data), func(v wire.Verdict) {
					n++
					if v.Err != nil && n < 5 {
						b.Errorf("line %d: %v", v.Line, v.Err)
					}
				})
				if err != nil || bad != 0 || n != lines {
					b.Fatalf("CheckStream: %d violation(s), %d verdicts for %d lines, err %v", bad, n, lines, err)
				}
			}
			b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
