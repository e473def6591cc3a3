package store

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/openmax/openmax/provider"
)

// Stream is one record written while its message streams in: the
// message's text goes to the file in pieces as it arrives (Write), and
// Commit writes the rest of the record and fsyncs it, so a long reply
// leaves only its last piece and the fsync for the moment it is complete.
// Until Commit the record is a torn last line (no newline, no checksum):
// a crash drops it when the session is continued, and nothing earlier is
// touched. Abort cuts it off. While a Stream is open the Writer appends
// nothing else. Its methods are safe for concurrent use with the
// Writer's, but a Stream is fed by one goroutine.
type Stream struct {
	w      *Writer
	crc    uint32 // of the msg object's bytes written so far
	n      int64  // bytes of the record written so far
	kicked int64  // of those, handed to the disk's writeback (kickWriteback)
	err    error  // why the stream ended early: a failed write, or Abort
	ended  bool
}

// kickEvery is how many bytes of a streamed record are written before
// their writeback is started, so that Commit's fsync finds at most about
// that much still to write, not the whole reply.
const kickEvery = 1 << 20

// errAborted is the reason of a Stream cut off by Abort.
var errAborted = errors.New("streamed record aborted")

// Stream starts a record of a message with role whose text streams in:
// Write the text as it arrives, then Commit the message. Errors are
// Append's: a closed Writer, a record already streaming, a publication
// or an earlier failed append that cannot be settled.
func (w *Writer) Stream(role provider.Role) (*Stream, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.ready(); err != nil {
		return nil, fmt.Errorf("stream to session %s: %w", w.id, err)
	}
	head, err := marshal(string(role))
	if err != nil {
		return nil, fmt.Errorf("stream to session %s: %w", w.id, err)
	}
	rec := append([]byte(recordHead+`{"role":`), head...)
	rec = append(rec, `,"text":"`...)
	s := &Stream{w: w}
	w.stream = s
	if err := s.writeLocked(rec, len(recordHead)); err != nil {
		return nil, err
	}
	return s, nil
}

// Write appends the next piece of the text, given as JSON string content
// (quoted, as internal/jsonstr encodes it: the record's text is the
// concatenation of the pieces, decoded), to the file now, in one write.
// After a failure the stream is over: the record is cut off the file and
// every later call returns the error.
func (s *Stream) Write(quoted []byte) error {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.ended {
		return s.over()
	}
	return s.writeLocked(quoted, 0)
}

// Commit writes the last piece of the text (quoted, as Write takes it)
// and the rest of m, every field but its role and text, which the stream
// already holds (m.Text is not looked at: the record's text is what was
// written), then fsyncs the file: when Commit returns nil, the message is
// on disk. On a failure the record is cut off, as a failed Append's is.
func (s *Stream) Commit(quoted []byte, m provider.Message) error {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.ended {
		return s.over()
	}
	d := toDisk(m)
	rest, err := marshal(diskRest{Thinking: d.Thinking, ToolCalls: d.ToolCalls, CallID: d.CallID, IsError: d.IsError, Phase: d.Phase})
	if err != nil {
		return s.failLocked(err)
	}
	rec := make([]byte, 0, len(quoted)+len(rest)+len(recordTail)+crcDigits+6)
	rec = append(append(rec, quoted...), '"')
	if len(rest) > 2 { // {}: nothing more
		rec = append(append(rec, ','), rest[1:len(rest)-1]...)
	}
	rec = append(rec, '}')
	crc := crc32.Update(s.crc, castagnoli(), rec)
	rec = appendRecordEnd(rec, crc)
	n, err := w.writeSync(rec)
	if err != nil {
		return s.failLocked(err)
	}
	w.size += s.n + int64(n)
	s.ended, w.stream = true, nil
	return nil
}

// Abort ends the stream without a record: what it wrote is cut off the
// file (now, or before the Writer's next record if the cut fails). After
// Commit, or a failure, it does nothing.
func (s *Stream) Abort() error {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.ended {
		return nil
	}
	s.ended, s.err, w.stream = true, errAborted, nil
	if s.n == 0 {
		return nil
	}
	w.dirty = errAborted
	if err := w.repair(); err != nil {
		return fmt.Errorf("abort the streamed record of session %s: %w", w.id, err)
	}
	return nil
}

// writeLocked writes p, a piece of the record whose first skip bytes are
// not part of the msg object (the record's head), and starts the
// writeback of what has piled up. w.mu is held.
func (s *Stream) writeLocked(p []byte, skip int) error {
	w := s.w
	if w.f == nil {
		return s.failLocked(errors.New("writer is closed"))
	}
	n, err := w.write(p)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	s.n += int64(n)
	if err != nil {
		return s.failLocked(err)
	}
	s.crc = crc32.Update(s.crc, castagnoli(), p[skip:])
	if s.n-s.kicked >= kickEvery {
		kickWriteback(w.f, w.size+s.kicked, s.n-s.kicked)
		s.kicked = s.n
	}
	return nil
}

// failLocked ends the stream on err, cutting what it wrote off the file
// as a failed Append does. w.mu is held.
func (s *Stream) failLocked(err error) error {
	w := s.w
	s.ended, s.err, w.stream = true, err, nil
	err = fmt.Errorf("stream to session %s: %w", w.id, err)
	if w.f == nil {
		return err
	}
	w.dirty = s.err
	if rerr := w.repair(); rerr != nil {
		return fmt.Errorf("%w (cutting off the partial record failed too, and is retried before the next append: %v)", err, rerr)
	}
	return err
}

// over is the error of a call on an ended stream.
func (s *Stream) over() error {
	if s.err == nil {
		return fmt.Errorf("stream to session %s: the record is already committed", s.w.id)
	}
	return fmt.Errorf("stream to session %s: %w", s.w.id, s.err)
}

// diskRest is a diskMessage's fields after its text, in the same order and
// with the same tags: what a streamed record ends with.
type diskRest struct {
	Thinking  []diskThinking `json:"thinking,omitempty"`
	ToolCalls []diskToolCall `json:"tool_calls,omitempty"`
	CallID    string         `json:"call_id,omitempty"`
	IsError   bool           `json:"is_error,omitempty"`
	Phase     string         `json:"phase,omitempty"`
}
