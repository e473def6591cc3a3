package wire

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// The parallel stream check. Most of a line's check needs nothing from the
// lines before it (Checker.prepare: UTF-8, the JSON split, the shape, the
// values); only the sequencing rules do (Checker.finish). So a reader cuts
// the input into batches of lines, workers prepare whole batches at once,
// and the calling goroutine finishes the lines in their order and reports
// them. The verdicts are the ones the serial check gives, line for line
// (TestParallelStreamMatchesSerialRapid).
//
// Memory stays bounded: at most cfg.batches batches are in flight, each
// holding at most cfg.batchBytes of copied lines. A line too long to copy
// cheaply (over cfg.copyMax) is not copied: it goes alone in a batch that
// points into the splitter's buffer, and the reader waits until that line
// has been finished before it reads on, as the serial check does.

// parallelConfig sizes the pipeline (and, for tests, the splitter of the
// serial check too); zero fields take the defaults.
type parallelConfig struct {
	workers    int   // goroutines preparing batches
	batches    int   // batches in flight (bounds memory)
	batchLines int   // lines in a batch
	batchBytes int   // bytes of copied lines in a batch
	copyMax    int   // longest line copied into a batch
	readBuf    int   // the splitter's read buffer
	inMemory   int   // the splitter's in-memory part of a long line
	longest    int64 // the longest line checked (MaxCheckedLine)
}

func (p parallelConfig) withDefaults() parallelConfig {
	p.workers = max(p.workers, 1)
	if p.batches == 0 {
		p.batches = 3 * p.workers
	}
	if p.batchLines == 0 {
		p.batchLines = 1024
	}
	if p.batchBytes == 0 {
		p.batchBytes = 128 << 10
	}
	if p.copyMax == 0 {
		p.copyMax = 64 << 10
	}
	if p.readBuf == 0 {
		p.readBuf = streamReadBuffer
	}
	if p.longest == 0 {
		p.longest = MaxCheckedLine
	}
	if p.inMemory == 0 {
		p.inMemory = heldLine
	}
	return p
}

// batchLine is one line of a batch and, once prepared, what prepare said.
type batchLine struct {
	start, end int   // the line is buf[start:end] (or held, for a held batch)
	tooLong    int64 // > 0: a line longer than MaxCheckedLine, of this size

	typ string
	def *Def
	m   object
	err error
}

type checkBatch struct {
	buf   []byte
	held  []byte // a long line not copied into buf (the only line then)
	lines []batchLine
	slab  object // the members of every line, end to end

	end     error         // the read ended after these lines: io.EOF or why
	ready   chan struct{} // closed once the lines are prepared
	release chan struct{} // for a held line: closed once it was finished
}

func (b *checkBatch) reset() {
	if b.held != nil || cap(b.slab) > 1<<16 {
		clear(b.slab[:cap(b.slab)]) // keep no long line alive
		b.slab = nil
	}
	b.buf, b.held, b.lines, b.slab = b.buf[:0], nil, b.lines[:0], b.slab[:0]
	b.end, b.release = nil, nil
	b.ready = make(chan struct{})
}

func (b *checkBatch) line(i int) []byte {
	if b.held != nil {
		return b.held
	}
	return b.buf[b.lines[i].start:b.lines[i].end]
}

// prepareBatch prepares every line of b with w (a worker's Checker).
func prepareBatch(w *Checker, b *checkBatch) {
	for i := range b.lines {
		l := &b.lines[i]
		if l.tooLong > 0 {
			continue
		}
		if cap(b.slab)-len(b.slab) < 32 {
			b.slab = slices.Grow(b.slab, max(64, cap(b.slab)))
		}
		n := len(b.slab)
		var m object
		l.typ, l.def, m, l.err = w.prepare(b.slab[n:], b.line(i))
		if len(m) > 0 && cap(b.slab)-n >= len(m) && &m[0] == &b.slab[n : n+1][0] {
			b.slab = b.slab[:n+len(m)]
		}
		l.m = m[:len(m):len(m)]
	}
	close(b.ready)
}

// streamParallel is Stream with cfg.workers goroutines preparing lines.
func (c *Checker) streamParallel(r io.Reader, report func(Verdict), cfg parallelConfig) (int, error) {
	cfg = cfg.withDefaults()
	lr := newLineSplitter(r, cfg.longest, cfg.inMemory, cfg.readBuf)
	defer lr.close()

	free := make(chan *checkBatch, cfg.batches)
	for range cfg.batches {
		free <- &checkBatch{}
	}
	work := make(chan *checkBatch, cfg.batches)
	order := make(chan *checkBatch, cfg.batches)
	for range cfg.workers {
		go func(w *Checker) {
			for b := range work {
				prepareBatch(w, b)
			}
		}(c.forWorker())
	}
	go readBatches(lr, cfg, free, work, order)

	bad := 0
	for b := range order {
		<-b.ready
		for i := range b.lines {
			l := &b.lines[i]
			var err error
			if l.tooLong > 0 {
				err = c.tooLong(l.tooLong)
			} else {
				err = c.finish(l.typ, l.def, l.m, l.err)
			}
			if err != nil {
				bad++
			}
			report(Verdict{Line: c.n, Err: err})
		}
		if b.release != nil {
			close(b.release)
		}
		switch {
		case b.end == nil:
			free <- b
			continue
		case errors.Is(b.end, io.EOF):
			if err := c.End(); err != nil {
				bad++
				report(Verdict{Line: 0, Err: err})
			}
			return bad, nil
		default:
			return bad, fmt.Errorf("read: %w", b.end)
		}
	}
	panic("wire: the batch reader stopped without an end") // unreachable
}

// readBatches cuts lr's lines into batches, handing each to the workers
// (work) and, in the same order, to the finisher (order). It stops after
// the batch that carries the end of the input, closing both.
func readBatches(lr *lineSplitter, cfg parallelConfig, free <-chan *checkBatch, work, order chan<- *checkBatch) {
	defer close(work)
	defer close(order)
	var b *checkBatch
	submit := func() {
		order <- b
		work <- b
		b = nil
	}
	for {
		if b == nil {
			b = <-free
			b.reset()
		}
		line, size, err := lr.next()
		switch {
		case err == nil && len(line) > cfg.copyMax:
			// Finish the lines before it, then this one where it lies.
			if len(b.lines) > 0 {
				submit()
				b = <-free
				b.reset()
			}
			b.held = line
			b.lines = append(b.lines, batchLine{})
			release := make(chan struct{})
			b.release = release
			submit()
			<-release // the finisher is done with the splitter's buffer
			continue
		case err == nil:
			start := len(b.buf)
			b.buf = append(b.buf, line...)
			b.lines = append(b.lines, batchLine{start: start, end: len(b.buf)})
		case errors.Is(err, errLineTooLong):
			b.lines = append(b.lines, batchLine{tooLong: max(size, 1)})
		default:
			b.end = err
			submit()
			return
		}
		if len(b.lines) >= cfg.batchLines || len(b.buf) >= cfg.batchBytes {
			submit()
		}
	}
}
