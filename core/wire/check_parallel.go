package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
)

// The parallel stream check. Most of a line's check needs nothing from the
// lines before it (Checker.prepare: UTF-8, the JSON split, the shape, the
// values); only the sequencing rules do (Checker.finish). So a reader reads
// the input in blocks cut after a newline (it neither splits nor copies
// lines: that was a sixth of the work when it did), workers cut and prepare
// whole blocks (check_scan.go), and the calling goroutine finishes the
// lines in their order and reports them. The verdicts are the ones the
// serial check gives, line for line (TestParallelStreamMatchesSerialRapid).
//
// Memory stays bounded: at most cfg.batches blocks are in flight, each of
// at most cfg.blockMax bytes and cfg.batchLines lines. A block is read to
// cfg.batchBytes (small enough that the blocks in flight, with their lines
// and members, stay in a core's cache) and grows to cfg.blockMax only
// while it holds no newline. A longer line is read by the splitter's
// long-line path (held in memory up to cfg.inMemory, then spooled to a
// file): it goes alone in a batch that points into the splitter's buffer,
// and the reader waits until that line has been finished before it reads
// on, as the serial check does.

// parallelConfig sizes the pipeline (and, for tests, the splitter of the
// serial check too); zero fields take the defaults.
type parallelConfig struct {
	workers    int   // goroutines preparing batches
	batches    int   // batches in flight (bounds memory)
	batchLines int   // lines in a batch
	batchBytes int   // bytes read into a block
	blockMax   int   // bytes a block grows to while it holds no newline
	readBuf    int   // the splitter's read buffer
	inMemory   int   // the splitter's in-memory part of a long line
	longest    int64 // the longest line checked (MaxCheckedLine)
}

func (p parallelConfig) withDefaults() parallelConfig {
	p.workers = max(p.workers, 1)
	if p.batches == 0 {
		p.batches = 2*p.workers + 1
	}
	if p.batchLines == 0 {
		p.batchLines = 4096
	}
	if p.batchBytes == 0 {
		p.batchBytes = 64 << 10
		if p.blockMax == 0 {
			p.blockMax = 256 << 10
		}
	}
	// A block's members are offsets below plainBit (cmember).
	p.batchBytes = min(p.batchBytes, 1<<30)
	p.blockMax = min(max(p.blockMax, p.batchBytes), 1<<30)
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

// parallelReadBuffer is the parallel check's read buffer: smaller than a
// block, so filling one reads the input straight into it (the long-line
// path reads through the buffer).
const parallelReadBuffer = 16 << 10

// batchLine is one line of a batch and, once prepared, what prepare said.
type batchLine struct {
	tooLong int64 // > 0: a line longer than MaxCheckedLine, of this size

	typ string
	def *Def
	err error
	// The line's members: b.cms[m0:m1] (offsets into b.buf), or, when
	// full, b.slab[m0:m1].
	m0, m1 int32
	full   bool
}

// cmember is a member of a line in a block, as offsets into the block: 16
// bytes where a member takes 56. The members go from a worker's core to
// the finisher's; writing and reading them was a third of a worker's time
// when they went whole.
type cmember struct {
	k0, k1, v0, v1 uint32 // key buf[k0:k1], value buf[v0:v1&^plainBit]
}

// plainBit marks, in v1, a value known to be a string without escapes.
const plainBit = 1 << 31

type checkBatch struct {
	buf   []byte // whole lines, the last one's newline missing only at the end of input
	block bool   // buf is still to be split into lines (by the worker)
	held  []byte // a long line, not in buf (the only line then)
	lines []batchLine
	cms   []cmember // the members of the lines read in one walk, end to end
	slab  object    // the members of the other lines, end to end

	end     error         // the read ended after these lines: io.EOF or why
	ready   chan struct{} // closed once the lines are prepared
	release chan struct{} // for a held line: closed once it was finished
}

func (b *checkBatch) reset() {
	if b.held != nil || cap(b.slab) > 1<<16 {
		clear(b.slab[:cap(b.slab)]) // keep no long line alive
		b.slab = nil
	}
	b.buf, b.held, b.lines, b.slab, b.block = b.buf[:0], nil, b.lines[:0], b.slab[:0], false
	b.cms = b.cms[:0]
	b.end, b.release = nil, nil
	b.ready = make(chan struct{})
}

// members returns the members of l, a line of b, appending them to dst
// when they were kept as offsets.
func (b *checkBatch) members(l *batchLine, dst object) object {
	if l.full {
		return b.slab[l.m0:l.m1:l.m1]
	}
	cms := b.cms[l.m0:l.m1]
	n := len(dst)
	dst = slices.Grow(dst, len(cms))[:n+len(cms)]
	for k, x := range cms {
		// Field by field: a member built whole is copied from the stack,
		// and that reload stalled on the stores just made (a sixth of the
		// finisher's time).
		e, v1 := &dst[n+k], x.v1&^plainBit
		e.key, e.raw, e.plain = b.buf[x.k0:x.k1], b.buf[x.v0:v1], x.v1 != v1
	}
	return dst
}

// streamParallel is Stream with cfg.workers goroutines preparing lines.
func (c *Checker) streamParallel(r io.Reader, report func(Verdict), cfg parallelConfig) (int, error) {
	if cfg.readBuf == 0 {
		// Blocks are read from the input directly, not through the read
		// buffer, when they ask for at least its size.
		cfg.readBuf = parallelReadBuffer
	}
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
		go func(w *checkWorker) {
			for b := range work {
				w.prepareBatch(b, cfg.longest)
			}
		}(newCheckWorker(c))
	}
	go readBatches(lr, cfg, free, work, order)

	bad := 0
	var members object // reused for the members of the lines finished
	for b := range order {
		<-b.ready
		for i := range b.lines {
			l := &b.lines[i]
			var err error
			switch {
			case l.tooLong > 0:
				err = c.tooLong(l.tooLong)
			case l.err != nil:
				err = c.finish(l.typ, l.def, nil, l.err) // a prepared violation reads no member
			default:
				m := b.members(l, members[:0])
				if !l.full {
					members = m
				}
				err = c.finish(l.typ, l.def, m, nil)
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

// readBatches reads the input in blocks that end after a newline, handing
// each to the workers (work) and, in the same order, to the finisher
// (order). What follows a block's last newline starts the next block. A
// line that does not fit in a block goes through the splitter's long-line
// path. It stops after the batch that carries the end of the input,
// closing both channels.
func readBatches(lr *lineSplitter, cfg parallelConfig, free <-chan *checkBatch, work, order chan<- *checkBatch) {
	defer close(work)
	defer close(order)
	submit := func(b *checkBatch) {
		order <- b
		work <- b
	}
	var carry []byte // the start of a line, read with the block before
	for {
		b := <-free
		b.reset()
		b.buf = append(b.buf, carry...)
		// Fill the block to batchBytes; while it holds no newline, double
		// it up to blockMax, so a line up to blockMax stays in a block.
		var err error
		cut := -1
		for goal := cfg.batchBytes; ; goal = min(2*goal, cfg.blockMax) {
			if cap(b.buf) < goal {
				b.buf = slices.Grow(b.buf, goal-len(b.buf))
			}
			for len(b.buf) < goal && err == nil {
				var n int
				n, err = lr.br.Read(b.buf[len(b.buf):goal])
				b.buf = b.buf[:len(b.buf)+n]
			}
			if err != nil {
				break
			}
			if cut = bytes.LastIndexByte(b.buf, '\n'); cut >= 0 || goal >= cfg.blockMax {
				break
			}
		}
		if err != nil {
			// The end of the input (or a failed read): what was read is
			// the last lines, the last one perhaps without its newline.
			b.block, b.end = true, err
			submit(b)
			return
		}
		if cut < 0 {
			// A line longer than a block: the splitter reads it to its end,
			// in memory or spooled, as the serial check does.
			carry = carry[:0]
			line, size, lerr := lr.long(b.buf)
			switch {
			case errors.Is(lerr, errLineTooLong):
				b.lines = append(b.lines, batchLine{tooLong: max(size, 1)})
				submit(b)
			case lerr != nil:
				b.end = lerr
				submit(b)
				return
			default:
				b.held = line
				b.lines = append(b.lines, batchLine{})
				release := make(chan struct{})
				b.release = release
				submit(b)
				<-release // the finisher is done with the splitter's buffer
			}
			continue
		}
		if n := bytes.Count(b.buf[:cut+1], []byte{'\n'}); n > cfg.batchLines {
			cut = -1
			for range cfg.batchLines {
				cut += 1 + bytes.IndexByte(b.buf[cut+1:], '\n')
			}
		}
		carry = append(carry[:0], b.buf[cut+1:]...)
		b.buf = b.buf[:cut+1]
		b.block = true
		submit(b)
	}
}
