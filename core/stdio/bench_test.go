package stdio_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/core"
	"github.com/openmax/openmax/core/stdio"
	"github.com/openmax/openmax/core/tool"
	"github.com/openmax/openmax/core/wire"
	"github.com/openmax/openmax/provider"
)

// Benchmarks only (go test -run '^$' -bench . ./core/stdio); plain go test
// runs none of this. bench/run.sh measures the same paths end to end
// through the binary.

// benchDeltaProvider streams n small text deltas, then finishes with stop.
type benchDeltaProvider struct{ n int }

func (p benchDeltaProvider) Stream(ctx context.Context, _ provider.Request) iter.Seq[provider.Part] {
	words := [...]string{"The ", "engine ", "streams ", "a ", "reply ", "from ", "the ", "provider, "}
	return func(yield func(provider.Part) bool) {
		for i := range p.n {
			if ctx.Err() != nil || !yield(provider.TextDelta{Text: words[i%len(words)]}) {
				return
			}
		}
		yield(provider.Finish{Reason: "stop"})
	}
}

// benchTokenCounter is the stdout of the served session: StreamConn
// hands it whole lines, one or many per Write, but for a long message_done,
// which comes in pieces; so counting token lines is a prefix check on each
// line, and a line a Write leaves open is kept until it ends.
type benchTokenCounter struct {
	tokens, bytes int
	done          bool
	open          []byte // a line not ended yet
}

var benchTokenPrefix = []byte(`{"session_id":"s-bench","type":"token"`)

func (c *benchTokenCounter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			c.open = append(c.open, rest...)
			break
		}
		if len(c.open) > 0 {
			c.line(append(c.open, rest[:i]...))
			c.open = c.open[:0]
		} else {
			c.line(rest[:i])
		}
		rest = rest[i+1:]
	}
	return len(p), nil
}

// line counts one protocol line, given without its newline.
func (c *benchTokenCounter) line(l []byte) {
	c.bytes += len(l) + 1
	if bytes.HasPrefix(l, benchTokenPrefix) {
		c.tokens++
	} else if bytes.Contains(l, []byte(`"type":"done"`)) {
		c.done = true
	}
}

// BenchmarkServeTokens runs whole sessions in process (hello, one user
// command answered by n token lines, message_done and done, then quit) and
// reports how many token lines per second reach stdout.
func BenchmarkServeTokens(b *testing.B) {
	for _, n := range []int{1_000, 200_000} {
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			tools, err := tool.NewRegistry()
			if err != nil {
				b.Fatal(err)
			}
			eng := &core.Engine{Provider: benchDeltaProvider{n: n}, Tools: tools}
			const in = `{"cmd":"user","text":"go"}` + "\n" + `{"cmd":"quit"}` + "\n"
			var outBytes int
			b.ReportAllocs()
			for b.Loop() {
				out := &benchTokenCounter{}
				code, err := stdio.Serve(context.Background(), strings.NewReader(in), out,
					stdio.Options{Engine: eng, SessionID: "s-bench", Version: "bench", Project: "/tmp"})
				if err != nil || code != 0 || out.tokens != n || !out.done {
					b.Fatalf("Serve: code %d, err %v, %d of %d tokens, done %v", code, err, out.tokens, n, out.done)
				}
				outBytes = out.bytes
			}
			b.SetBytes(int64(outBytes))
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkServeConnTokens runs the sessions of BenchmarkServeTokens over
// the in-memory pair, with the client reading each line as it comes: the
// same work without the stdout stream, so the two together separate the
// cost of writing stdout from the rest.
func BenchmarkServeConnTokens(b *testing.B) {
	for _, n := range []int{1_000, 200_000} {
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			tools, err := tool.NewRegistry()
			if err != nil {
				b.Fatal(err)
			}
			eng := &core.Engine{Provider: benchDeltaProvider{n: n}, Tools: tools}
			var outBytes int
			b.ReportAllocs()
			for b.Loop() {
				server, client := stdio.NewPipe()
				_ = client.WriteLine([]byte(`{"cmd":"user","text":"go"}`))
				_ = client.WriteLine([]byte(`{"cmd":"quit"}`))
				_ = client.CloseWrite()
				counted := make(chan *benchTokenCounter)
				go func() {
					out := &benchTokenCounter{}
					for {
						l, err := client.ReadLine(context.Background())
						if err != nil {
							break // io.EOF: ServeConn closed its end
						}
						out.line(l)
					}
					counted <- out
				}()
				code, err := stdio.ServeConn(context.Background(), server,
					stdio.Options{Engine: eng, SessionID: "s-bench", Version: "bench", Project: "/tmp"})
				out := <-counted
				if err != nil || code != 0 || out.tokens != n || !out.done {
					b.Fatalf("ServeConn: code %d, err %v, %d of %d tokens, done %v", code, err, out.tokens, n, out.done)
				}
				outBytes = out.bytes
			}
			b.SetBytes(int64(outBytes))
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkLineReaderLongLine measures how fast stdin framing consumes and
// drops a line far over MaxLine (the path of a 1 GiB stdin line).
func BenchmarkLineReaderLongLine(b *testing.B) {
	const size = 64 << 20
	b.SetBytes(size + 1)
	b.ReportAllocs()
	for b.Loop() {
		lr := wire.NewLineReader(io.MultiReader(&benchRepeatReader{left: size}, strings.NewReader("\n")), wire.MaxLine)
		_, err := lr.Next()
		if _, ok := err.(*wire.LineTooLongError); !ok {
			b.Fatalf("Next: %v, want *LineTooLongError", err)
		}
	}
}

// benchRepeatReader yields left bytes of 'a' without holding them.
type benchRepeatReader struct{ left int }

var benchA = bytes.Repeat([]byte("a"), 64<<10)

func (r *benchRepeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.left, len(benchA))
	copy(p, benchA[:n])
	r.left -= n
	return n, nil
}

// BenchmarkPausedTokenLatency measures how long a token takes from the
// model's part to its line being read from an OS pipe, when the stream
// pauses after every token (the model sends the next part only once the
// client has read the line): the case a batching stdout must not delay.
// Each iteration is one such token; it reports the median, p99 and
// worst latency, and beside them the peer: the same lines, each written
// with its own write(2) on the same kind of pipe straight from the
// producing goroutine (the unbuffered stdout this replaced), read the
// same way.
func BenchmarkPausedTokenLatency(b *testing.B) {
	b.Run("openmax", func(b *testing.B) {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		n := b.N
		yielded := make([]time.Time, n)
		seen := make(chan struct{})
		tools, err := tool.NewRegistry()
		if err != nil {
			b.Fatal(err)
		}
		eng := &core.Engine{Tools: tools, Provider: provider.Func(func(ctx context.Context, _ provider.Request) iter.Seq[provider.Part] {
			return func(yield func(provider.Part) bool) {
				for k := range n {
					yielded[k] = time.Now()
					if !yield(provider.TextDelta{Text: "paused "}) {
						return
					}
					select { // the pause: nothing more until the line is read
					case <-seen:
					case <-ctx.Done():
						return
					}
				}
				yield(provider.Finish{Reason: "stop"})
			}
		})}
		lat := make([]time.Duration, 0, n)
		readDone := make(chan error, 1)
		go func() {
			br := bufio.NewReaderSize(r, 1<<20)
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					readDone <- err
					return
				}
				if bytes.HasPrefix(line, benchTokenPrefix) {
					lat = append(lat, time.Since(yielded[len(lat)]))
					seen <- struct{}{}
				}
			}
		}()
		const in = `{"cmd":"user","text":"go"}` + "\n" + `{"cmd":"quit"}` + "\n"
		b.ResetTimer()
		code, err := stdio.Serve(context.Background(), strings.NewReader(in), w,
			stdio.Options{Engine: eng, SessionID: "s-bench", Version: "bench", Project: "/tmp"})
		b.StopTimer()
		w.Close()
		<-readDone
		if err != nil || code != 0 || len(lat) != n {
			b.Fatalf("Serve: code %d, err %v, %d of %d tokens", code, err, len(lat), n)
		}
		reportLatency(b, lat)
	})
	b.Run("peer-write-per-line", func(b *testing.B) {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		line, _ := wire.AppendEvent(nil, "s-bench", wire.Token{Text: "paused "})
		seen := make(chan time.Time)
		go func() {
			br := bufio.NewReaderSize(r, 1<<20)
			for {
				if _, err := br.ReadSlice('\n'); err != nil {
					close(seen)
					return
				}
				seen <- time.Now()
			}
		}()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			if _, err := w.Write(line); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, (<-seen).Sub(t0))
		}
		b.StopTimer()
		w.Close()
		reportLatency(b, lat)
	})
}

// reportLatency reports the median, p99 and worst of lat in microseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds())/1e3, "max-µs")
}
