package codexbackend

import (
	"fmt"
	"io"
	"sync"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/codex"
	"github.com/openmax/openmax/provider/httpx"
)

// What codex can make openmax hold is bounded, whatever it sends
// (docs/codex-backend.md, "Limits"): a line, the events read and not yet
// handled, one reply, and the stderr lines about what it sent.

// maxLine is the longest app-server line openmax reads; a longer one is
// skipped and counted as an unusable line.
const maxLine = 8 << 20

// turnQueueBytes bounds the params of the events routed to a turn (by
// the client's reader, codex.Options.OnEvent) and not yet handled by it:
// past it the reader waits, so the client stops reading from the
// app-server, whose writes then wait.
const turnQueueBytes = 1 << 20

// maxReplyText is the most text of one codex reply openmax holds (to
// close it with message_done and keep it in the session): eight times
// the longest reply a current model writes (128k tokens, about 512 KiB).
// A reply past it ends truncated, as one past MaxReplyBytes does.
const maxReplyText = 4 << 20

// shownBadLines is how many unusable lines from the app-server are named
// on stderr between two summaries; the rest are counted.
const shownBadLines = 5

// badLines reports the app-server's unusable lines (not JSON, unknown
// methods, over maxLine): the first few, then how many more.
type badLines struct {
	log io.Writer

	mu            sync.Mutex
	shown, hidden int // since the last summary
}

// report is the client's OnBadLine: it runs on the client's reader and
// writes at most shownBadLines lines between summaries.
func (b *badLines) report(_ []byte, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown < shownBadLines {
		b.shown++
		fmt.Fprintf(b.log, "openmax: codex app-server: %v\n", err)
		return
	}
	b.hidden++
}

// summary writes how many unusable lines were not shown since the last
// summary, if any were, and shows the next few again.
func (b *badLines) summary() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hidden > 0 {
		fmt.Fprintf(b.log, "openmax: codex app-server: %d more lines it sent could not be used and were not shown (%d in all)\n", b.hidden, b.shown+b.hidden)
	}
	b.shown, b.hidden = 0, 0
}

// took accounts for an event the turn took from its queue.
func (r *turnRun) took(ev codex.Event) {
	r.pending.Add(-int64(len(ev.Params)))
	select {
	case r.room <- struct{}{}:
	default:
	}
}

// roomFor waits until the turn's queue has room for size more bytes (an
// empty queue always has); false when the turn ended first.
func (r *turnRun) roomFor(size int64) bool {
	for n := r.pending.Load(); n > 0 && n+size > turnQueueBytes; n = r.pending.Load() {
		select {
		case <-r.room:
		case <-r.finished:
			return false
		}
	}
	r.pending.Add(size)
	return true
}

// overReply counts a delta of the turn's reply (its text or reasoning,
// as the bytes codex sent) and reports whether the reply has passed the
// reply-size cap.
func (r *turnRun) overReply(v any, size int) bool {
	var turn string
	switch p := v.(type) {
	case *codex.AgentMessageDeltaNotification:
		turn = p.TurnID
	case *codex.ReasoningSummaryTextDeltaNotification:
		turn = p.TurnID
	case *codex.ReasoningTextDeltaNotification:
		turn = p.TurnID
	default:
		return false
	}
	if turn != r.turnID {
		return false
	}
	r.replyBytes += int64(size)
	max := r.b.cfg.MaxReplyBytes
	return max > 0 && r.replyBytes > max || r.textLen()+size > maxReplyText
}

// capped ends a turn whose reply passed the reply-size cap, as any
// provider's reply over it ends: truncated, what streamed kept.
func (r *turnRun) capped() string {
	detail := "codex's reply passed " + httpx.Size(r.b.cfg.MaxReplyBytes)
	if max := r.b.cfg.MaxReplyBytes; max <= 0 || r.replyBytes <= max {
		detail = "codex's reply passed " + httpx.Size(maxReplyText) + " of text, the most openmax holds of one codex reply"
	}
	err := &provider.LimitError{Limit: "max reply bytes", Detail: detail}
	return r.cut(err.Error() + "; the turn was interrupted")
}

// textLen is the length of the open run's text, 0 when none is open.
func (r *turnRun) textLen() int {
	if r.text == nil {
		return 0
	}
	return r.text.Len()
}
