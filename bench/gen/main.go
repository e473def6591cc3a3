// Command gen writes the inputs of bench/run.sh, a manual measurement
// script (never run in CI):
//
//	gen stream   -mb 200 > stream.jsonl      a valid openmax stdout stream
//	gen longline -bytes 1073741824 | openmax --stdio ...
//	                                         one huge stdin line, then a user
//	                                         command and quit
//	gen scenario -chunks 200000 > s.yaml     a script scenario of one reply
//	                                         made of that many text chunks
//	gen library -n 1000 -out DIR             a cassette library of n cassettes
//	                                         (DIR/lib) and their golden files
//	                                         (DIR/golden/lib), for bench/shardscale
//
// Everything goes to stdout but the library, written to files; nothing
// touches the network.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openmax/openmax/core/wire"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch mode, args := os.Args[1], os.Args[2:]; mode {
	case "stream":
		err = stream(args)
	case "longline":
		err = longLine(args)
	case "scenario":
		err = scenario(args)
	case "library":
		err = library(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gen stream [-mb N] | gen longline [-bytes N] | gen scenario [-chunks N] | gen library -n N -out DIR")
	os.Exit(2)
}

// SessionID is the session every generated line belongs to.
const SessionID = "s-bench0123456789"

// stream writes hello and then whole turns until about mb megabytes
// (10^6 bytes) went out. Every line is encoded by the wire package itself, so
// the stream is exactly what openmax would print.
func stream(args []string) error {
	fs := flag.NewFlagSet("stream", flag.ExitOnError)
	mb := fs.Int("mb", 200, "stop after the turn that crosses this many megabytes (10^6 bytes)")
	_ = fs.Parse(args)

	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	limit := int64(*mb) * 1_000_000
	var n int64
	var buf []byte
	var err error
	put := func() {
		if err == nil {
			_, err = w.Write(buf)
			n += int64(len(buf))
		}
	}
	buf, err = wire.AppendLine(buf[:0], wire.Hello{
		Proto: wire.Proto, ProtocolVersion: wire.ProtocolVersion, SessionID: SessionID,
		Version: "0.1.0", Project: "/home/dev/src/openmax",
	})
	put()
	for turn := 0; n < limit && err == nil; turn++ {
		for _, e := range Turn(turn) {
			if err != nil {
				break
			}
			buf, err = wire.AppendEvent(buf[:0], SessionID, e)
			put()
		}
	}
	if err != nil {
		return err
	}
	return w.Flush()
}

var vocabulary = strings.Fields(`The engine streams a reply from the provider, runs the tool calls of a
completed reply, feeds their results back and repeats until the model stops.
Let me read core/engine.go to see how budget is computed — it estimates about
four bytes per token over the transcript and the "tool schemas" sent with every
request. Ünïcode, emoji 🚀 and CJK 日本語 appear in real replies too.`)

// toolOutput is what a read_file-like tool returns: code with tabs, quotes,
// backslashes and newlines, so the JSON carries escapes.
const toolOutput = `func (e *Engine) budget(s *Session) wire.Budget {
	n := len(e.System)
	for _, m := range s.Messages() {
		n += len(m.Text) + len(m.CallID)
		for _, th := range m.Thinking {
			n += len(th.Text)
		}
	}
	window := e.ContextTokens
	if window <= 0 {
		window = DefaultContextTokens // "128k"
	}
	return wire.Budget{UsedTokens: (n + 3) / 4, ContextTokens: window} // C:\path\ok
}
`

// Turn returns the events of one realistic turn with a tool round trip:
// budget, thinking, a run of tokens and its message_done, usage, tool_start,
// tool_end, a second run of tokens, usage, done.
func Turn(i int) []wire.Event {
	var ev []wire.Event
	ev = append(ev, wire.Budget{UsedTokens: 1200 + 37*i, ContextTokens: 200_000})
	for k := range 4 {
		ev = append(ev, wire.Thinking{Text: vocabulary[(i+k)%len(vocabulary)] + " "})
	}
	run := func(words int, off int) {
		var sb strings.Builder
		for k := range words {
			t := vocabulary[(off+k)%len(vocabulary)] + " "
			sb.WriteString(t)
			ev = append(ev, wire.Token{Text: t})
		}
		ev = append(ev, wire.MessageDone{Text: sb.String()})
	}
	cached := 512
	run(24, i)
	ev = append(ev, wire.Usage{PromptTokens: 1500 + i%1000, CompletionTokens: 42, CachedTokens: &cached})
	id := fmt.Sprintf("call_%d_1", i)
	args, _ := json.Marshal(map[string]any{"path": "core/engine.go", "offset": i % 300, "limit": 40})
	ev = append(ev,
		wire.ToolStart{CallID: id, Name: "read_file", Args: args},
		wire.ToolEnd{CallID: id, OK: true, Output: toolOutput},
	)
	run(48, i*7)
	ev = append(ev, wire.Usage{PromptTokens: 2100 + i%1000, CompletionTokens: 96, CachedTokens: nil})
	ev = append(ev, wire.Done{StopReason: "stop"})
	return ev
}

// longLine writes one line of n bytes of 'a', its newline, then a user
// command (to show the session still answers) and quit.
func longLine(args []string) error {
	fs := flag.NewFlagSet("longline", flag.ExitOnError)
	n := fs.Int64("bytes", 1<<30, "length of the long line, without its newline")
	_ = fs.Parse(args)

	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = 'a'
	}
	for left := *n; left > 0; {
		b := block
		if int64(len(b)) > left {
			b = b[:left]
		}
		if _, err := os.Stdout.Write(b); err != nil {
			return err
		}
		left -= int64(len(b))
	}
	_, err := io.WriteString(os.Stdout, "\n"+`{"cmd":"user","text":"still alive"}`+"\n"+`{"cmd":"quit"}`+"\n")
	return err
}

// scenario writes a script scenario whose single reply streams n small text
// chunks and then finishes with stop.
func scenario(args []string) error {
	fs := flag.NewFlagSet("scenario", flag.ExitOnError)
	n := fs.Int("chunks", 200_000, "text chunks in the reply")
	_ = fs.Parse(args)

	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	fmt.Fprintf(w, "# %d text chunks, generated by bench/gen\nreplies:\n  - chunks:\n", *n)
	for i := range *n {
		fmt.Fprintf(w, "      - text: %q\n", vocabulary[i%len(vocabulary)]+" ")
	}
	fmt.Fprintln(w, "      - finish: stop")
	return w.Flush()
}

// library writes a library of n cassettes into out/lib and their golden
// files into out/golden/lib (the folder `openmax replay out/lib` compares
// with by default): the repository's recorded library (-from, with its
// golden files in -golden) taken round-robin, cassette i named
// cNNNNNN_<source name>, so the library mixes every provider and fault the
// recorded one has.
func library(args []string) error {
	fs := flag.NewFlagSet("library", flag.ExitOnError)
	n := fs.Int("n", 100, "cassettes in the library")
	out := fs.String("out", "", "the folder to write lib/ and golden/lib/ into (required)")
	from := fs.String("from", "cassettes", "the recorded library to take cassettes from")
	goldens := fs.String("golden", "golden/cassettes", "its golden files")
	_ = fs.Parse(args)
	if *out == "" || *n < 1 {
		return fmt.Errorf("library: want -n at least 1 and -out DIR")
	}
	srcs, err := filepath.Glob(filepath.Join(*from, "*.yaml"))
	if err != nil || len(srcs) == 0 {
		return fmt.Errorf("library: no cassettes in %s", *from)
	}
	sort.Strings(srcs)
	lib, gold := filepath.Join(*out, "lib"), filepath.Join(*out, "golden", "lib")
	for _, d := range []string{lib, gold} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	type pair struct{ cassette, golden []byte }
	cache := map[string]pair{}
	for i := range *n {
		src := srcs[i%len(srcs)]
		base := strings.TrimSuffix(filepath.Base(src), ".yaml")
		p, ok := cache[src]
		if !ok {
			if p.cassette, err = os.ReadFile(src); err != nil {
				return err
			}
			if p.golden, err = os.ReadFile(filepath.Join(*goldens, base+".golden")); err != nil {
				return err
			}
			cache[src] = p
		}
		name := fmt.Sprintf("c%06d_%s", i, base)
		if err := os.WriteFile(filepath.Join(lib, name+".yaml"), p.cassette, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(gold, name+".golden"), p.golden, 0o644); err != nil {
			return err
		}
	}
	return nil
}
