package wire

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Checker validates a stream of openmax-stdio/6 stdout lines.
//
// By default it checks stdio-protocol.md, no more and no less: each rule is
// listed with the sentence it comes from in SpecRules (check_rules.go), and
// what the spec leaves open is allowed (docs/checker.md). Lines are checked
// for their shape (known type, required fields, JSON types, enums, which
// lines carry session_id; unknown members are ignored) and for the
// sequencing the spec states: hello first, transcript only right after a
// continued hello, a normal turn's token run closed by one message_done, the
// error line before done error or truncated, turn_refused after message_done.
// A turn is the span from its first turn line to its done.
//
// With Strict, it also holds the stream to openmax's own habits, which its
// tests use on its own output: every admitted turn opens with exactly one
// budget line (so a duplicated or dropped done shows), no unknown members,
// every tool_start has its tool_end, message_done repeats the token run,
// the error line directly precedes done, protocol_error names its stdin
// line ("line N: "), and the rest of the bookkeeping in StrictRules.
//
// A Checker is not safe for concurrent use.
type Checker struct {
	n         int
	sessionID string
	helloSeen bool
	wantTx    bool // a continued hello: transcript must come next
	prev      string

	turn      bool
	run       bool // tokens streamed since the last message_done/error
	runText   strings.Builder
	runFrom   int  // line that opened the run
	closed    bool // the last reply ended in message_done, nothing since
	errRun    bool // the error line cut an open run of tokens
	turnError bool // an error line went out in this turn
	afterErr  bool // the error line was the last turn line
	tools     map[string]int
	approvals map[string]bool
	asked     bool // a line of a model reply went out in this turn
	refused   int  // turn_refused lines in this turn

	input *clientInput // set by SetInput

	strict     bool // openmax's own habits too (Strict)
	overBudget bool // a schemas_over_budget went out in this session

	members object // reused by every line: the split of the current one
	scratch []byte // reused for decoding escaped strings

	// twoPass reads lines the way the checker did before the single pass:
	// json.Valid and then a split, checkFields, every string decoded. Only
	// tests set it, to use the old reading as the oracle for the new one.
	twoPass bool
}

// CheckOption configures a Checker.
type CheckOption func(*Checker)

// Strict makes a Checker also hold the stream to openmax's own habits
// (StrictRules in check_rules.go), beyond what stdio-protocol.md requires:
// openmax's tests use it on openmax's own output; openmax --check --stdio
// --strict is the same.
func Strict() CheckOption { return func(c *Checker) { c.strict = true } }

// NewChecker returns a Checker at the start of a stream, checking exactly
// stdio-protocol.md unless an option says otherwise.
func NewChecker(opts ...CheckOption) *Checker {
	c := &Checker{tools: map[string]int{}, approvals: map[string]bool{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Line checks the next line (without its newline) and returns the violation,
// or nil when the line is legal here.
func (c *Checker) Line(line []byte) error {
	typ, d, m, err := c.prepare(c.members, line)
	if m != nil {
		c.members = m
	}
	err = c.finish(typ, d, m, err)
	// Keep the members' slice for the next line, but not a long line it
	// points into (short ones are in the reader's buffer anyway).
	if len(line) > streamReadBuffer {
		clear(c.members[:cap(c.members)])
	}
	c.members = c.members[:0]
	return err
}

// prepare is the part of a line's check that needs nothing from the lines
// before it: UTF-8, the JSON split (appended to dst[:0]), the type, the
// shape and the values. It reads only the Checker's options and its scratch
// space, so a copy of them (forWorker) can prepare lines on another
// goroutine. m is the split when there was one, even with an error.
func (c *Checker) prepare(dst object, line []byte) (typ string, d *Def, m object, err error) {
	if !utf8.Valid(line) {
		return "", nil, nil, fmt.Errorf("not valid UTF-8")
	}
	if c.twoPass {
		m, err = parseObjectTwoPass(line)
	} else {
		m, err = parseObjectInto(dst, line)
	}
	if err != nil {
		if errors.Is(err, errNotObject) {
			return "", nil, nil, fmt.Errorf("not a JSON object: %s", jsonKind(line))
		}
		return "", nil, nil, fmt.Errorf("not a JSON object: %s", describeJSONError(line, err))
	}
	typ, d, err = c.prepareObject(m, nil)
	return typ, d, m, err
}

// prepareObject is prepare after the split: the type, the shape and the
// values of the members m. known, when not nil, is the definition the
// line's "type" member names, found by a caller that has read the same
// member before (check_scan.go's prefix memo): the lookup is skipped then.
func (c *Checker) prepareObject(m object, known *Def) (typ string, d *Def, err error) {
	d = known
	if d == nil {
		rawType, typePlain, ok := m.getv("type")
		if !ok {
			return "", nil, fmt.Errorf(`missing "type"`)
		}
		if jsonKind(rawType) != "string" {
			return "", nil, fmt.Errorf(`"type" must be a string, got %s`, jsonKind(rawType))
		}
		if c.twoPass {
			d, ok = EventDef(unquote(rawType))
			if !ok {
				d, ok = LineDef(unquote(rawType))
			}
		} else {
			d, ok = lineDef(rawType, typePlain)
		}
		if !ok {
			typ := unquote(rawType)
			return typ, nil, fmt.Errorf("unknown type %s", quoteShort(typ))
		}
	}
	typ = d.Name
	if err := c.shape(d, m); err != nil {
		return typ, nil, fmt.Errorf("%s: %w", typ, err)
	}
	if err := c.values(typ, m); err != nil {
		return typ, nil, fmt.Errorf("%s: %w", typ, err)
	}
	return typ, d, nil
}

// finish counts a prepared line and, when prepare found nothing wrong with
// it, checks it against the stream so far (the sequencing rules).
func (c *Checker) finish(typ string, d *Def, m object, err error) error {
	c.n++
	if err == nil {
		if serr := c.sequence(d, m); serr != nil {
			err = fmt.Errorf("%s: %w", typ, serr)
		}
	}
	c.prev = typ
	if err == nil && c.input != nil {
		c.observeInput(typ, m.str("message"), m.str("stop_reason"))
	}
	return err
}

// forWorker returns a Checker that prepares lines as c would, with scratch
// space of its own.
func (c *Checker) forWorker() *Checker {
	return &Checker{strict: c.strict, twoPass: c.twoPass}
}

// lineDef finds the definition named by a line's raw "type" string, events
// first, without allocating when the name has no escapes.
func lineDef(rawType []byte, known bool) (*Def, bool) {
	if s, plain := plainString(rawType, known); plain {
		if d, ok := eventByName[string(s)]; ok {
			return d, true
		}
		d, ok := lineByName[string(s)]
		return d, ok
	}
	typ := unquote(rawType)
	if d, ok := EventDef(typ); ok {
		return d, true
	}
	return LineDef(typ)
}

var sessionIDField = Field{Name: "session_id", Kind: KindString, NonEmpty: true}

func (c *Checker) shape(d *Def, m object) error {
	var names [2]string
	extra := append(names[:0], "type")
	if d.SessionID && d.Role == RoleEvent {
		raw, known, ok := m.getv("session_id")
		if !ok {
			return fmt.Errorf(`missing "session_id"`)
		}
		if c.twoPass || !plainValue(&sessionIDField, raw, known) {
			f := sessionIDField
			if err := checkValue(&f, raw); err != nil {
				return err
			}
		}
		extra = append(extra, "session_id")
	} else if !d.SessionID {
		if _, ok := m.get("session_id"); ok {
			return fmt.Errorf("must not carry session_id")
		}
	}
	if c.twoPass {
		if !c.strict {
			for _, mem := range m {
				extra = append(extra, string(mem.key))
			}
		}
		return checkFields(d.Fields, m, extra...)
	}
	return checkLineFields(d.Fields, m, extra, c.strict)
}

// maxContinuations is how many turn_end refusals a turn honors (the
// stop_reason table's unverified: "more times than the harness honors (8)").
const maxContinuations = 8

// replyLine reports whether an event type shows the model was asked.
func replyLine(typ string) bool {
	switch typ {
	case "token", "thinking", "retry", "usage", "message_done", "tool_start":
		return true
	}
	return false
}

// outsideTurn reports whether an event type may appear outside a turn (a
// switch: a map lookup on every line was a visible part of the check).
func outsideTurn(typ string) bool {
	switch typ {
	case "refrozen", "hook_failed", "schemas_over_budget":
		return true
	}
	return false
}

func (c *Checker) sequence(d *Def, m object) error {
	typ := d.Name
	if !c.helloSeen {
		if typ != "hello" {
			return fmt.Errorf("the first line must be hello")
		}
		c.helloSeen = true
		c.sessionID = m.str("session_id")
		cont, _ := m.get("continued")
		c.wantTx = string(cont) == "true"
		return nil
	}
	if c.wantTx {
		c.wantTx = false
		if typ != "transcript" {
			return fmt.Errorf("a continued hello must be followed by transcript")
		}
	} else if typ == "transcript" {
		return fmt.Errorf("transcript only right after a hello with continued true")
	}
	if typ == "hello" {
		return fmt.Errorf("hello only as the first line")
	}
	if d.SessionID {
		if raw, known, _ := m.getv("session_id"); !c.strEq(raw, known, c.sessionID) {
			sid := m.str("session_id")
			return fmt.Errorf("session_id %s differs from hello's %s", quoteShort(sid), quoteShort(c.sessionID))
		}
	}
	if d.Role == RoleLine {
		return nil // transcript, protocol_error, approval_mode ack: anywhere after hello
	}
	if typ == "schemas_over_budget" {
		if c.overBudget {
			return fmt.Errorf("a second schemas_over_budget: it is advisory, at most once per session")
		}
		c.overBudget = true
	}
	if outsideTurn(typ) {
		if typ == "refrozen" && c.turn {
			return fmt.Errorf("refrozen while a turn is in flight (reload must be refused then)")
		}
		return nil
	}
	if typ == "harness_note" && !c.turn && !c.strict {
		// A note inserted before the next prompt may go out between turns.
		if id := m.str("call_id"); id != "" {
			return fmt.Errorf("call_id %s between turns links to no tool result", quoteShort(id))
		}
		return nil
	}

	if typ == "done" && m.str("stop_reason") == StopRefused {
		if c.turn {
			return fmt.Errorf("done refused while a turn is in flight: a user sent in flight gets a protocol_error alone")
		}
		if c.prev != "protocol_error" {
			return fmt.Errorf("done refused must follow a protocol_error")
		}
		return nil
	}
	if !c.turn {
		if typ == "budget" {
			c.openTurn()
			return nil
		}
		if c.strict {
			if typ == "done" {
				return fmt.Errorf("done with no turn open (a duplicated done, or a turn that never opened with budget)")
			}
			return fmt.Errorf("%s outside a turn (every admitted turn opens with budget; was a done dropped or moved?)", typ)
		}
		c.openTurn() // the spec names no first line of a turn: this one opens it
	} else if typ == "budget" {
		if c.strict {
			return fmt.Errorf("budget inside a turn: openmax sends it once, as the first line of a turn (was the previous turn's done dropped?)")
		}
		return nil
	}
	if c.strict && c.afterErr && typ != "done" {
		return fmt.Errorf("after an error line the turn must end with done, got %s", typ)
	}
	switch typ {
	case "token", "thinking", "retry":
		if c.strict && c.closed {
			return fmt.Errorf("a new reply after message_done with no tool call or turn_refused between (was a done dropped?)")
		}
		c.closed = false // a new reply (strict refuses it above)
	case "turn_refused":
		if !c.closed {
			return fmt.Errorf("turn_refused must follow the refused completion's message_done")
		}
		if n := m.num("continuation"); n != c.refused || n >= maxContinuations {
			return fmt.Errorf("turn_refused continuation %d: it counts the refusals honored before it in the turn (%d here), at most %d in all", n, c.refused, maxContinuations)
		}
		c.refused++
		c.closed = false
	case "tool_start":
		c.closed = false
	}
	if replyLine(typ) {
		c.asked = true
	}
	switch typ {
	case "harness_note":
		if id := m.str("call_id"); id != "" {
			if _, ok := c.tools[id]; !ok {
				return fmt.Errorf("call_id %s names no tool call of this turn", quoteShort(id))
			}
		}
	case "token":
		if !c.run {
			c.run, c.runFrom = true, c.n
			c.runText.Reset()
		}
		if c.strict { // only strict compares message_done with the run
			raw, known, _ := m.getv("text")
			c.appendValue(&c.runText, raw, known)
		}
	case "message_done":
		if c.closed {
			return fmt.Errorf("a second message_done for a reply already closed: one message_done terminates a run")
		}
		if raw, known, _ := m.getv("text"); c.strict && c.run && !c.strEq(raw, known, c.runText.String()) {
			return fmt.Errorf("text differs from the run of tokens it closes (line %d on)", c.runFrom)
		}
		c.run, c.closed = false, true
	case "error":
		c.errRun = c.run
		c.run = false
		c.turnError, c.afterErr = true, true
	case "retry":
		if c.run {
			return fmt.Errorf("a stream that already sent tokens (line %d on) must not be retried", c.runFrom)
		}
		if a, max := m.num("attempt"), m.num("max_attempts"); a < 2 || a > max {
			return fmt.Errorf("attempt %d outside 2..max_attempts (%d)", a, max)
		}
	case "tool_start":
		id := m.str("call_id")
		if c.strict {
			if c.run {
				return fmt.Errorf("tool call during an open run of tokens (line %d on): tools run only after the reply completed", c.runFrom)
			}
			if c.tools[id] == 1 {
				return fmt.Errorf("call_id %s already running", quoteShort(id))
			}
		}
		c.tools[id] = 1
	case "tool_end":
		id := m.str("call_id")
		if c.strict && c.tools[id] != 1 {
			return fmt.Errorf("call_id %s has no running tool_start", quoteShort(id))
		}
		c.tools[id] = 2
	case "diff":
		if id := m.str("call_id"); c.strict && c.tools[id] != 1 {
			return fmt.Errorf("call_id %s names no running tool call", quoteShort(id))
		}
	case "approval_request":
		id := m.str("approval_id")
		if _, seen := c.approvals[id]; c.strict && seen {
			return fmt.Errorf("approval_id %s reused", quoteShort(id))
		}
		c.approvals[id] = true
	case "approval_settled":
		id := m.str("approval_id")
		if c.strict && !c.approvals[id] {
			return fmt.Errorf("approval_id %s is not pending", quoteShort(id))
		}
		c.approvals[id] = false
	case "done":
		return c.closeTurn(m.str("stop_reason"))
	}
	return nil
}

func (c *Checker) openTurn() {
	c.turn, c.run, c.turnError, c.afterErr = true, false, false, false
	c.closed, c.errRun, c.asked, c.refused = false, false, false, 0
	clear(c.tools)
}

// harnessStop reports whether a stop_reason is one the stop_reason table
// lists; any other is a provider finish_reason, "a normal turn".
func harnessStop(reason string) bool {
	switch reason {
	case StopTruncated, StopMaxIterations, StopBudgetExhausted, StopUnverified,
		StopBlocked, StopCancelled, StopError, StopRefused:
		return true
	}
	return false
}

func (c *Checker) closeTurn(reason string) error {
	c.turn = false
	if c.run && (c.strict || !harnessStop(reason)) {
		return fmt.Errorf("the run of tokens from line %d was never closed by message_done or error", c.runFrom)
	}
	if c.strict {
		if err := c.closeStrict(reason); err != nil {
			return err
		}
	}
	switch reason {
	case StopError, StopTruncated:
		if !c.turnError {
			return fmt.Errorf("stop_reason %s must be preceded by an error line in its turn", reason)
		}
		if reason == StopTruncated && c.errRun {
			return fmt.Errorf("a truncated reply's partial text must be closed by message_done before the error line")
		}
	}
	return nil
}

// closeStrict is openmax's own bookkeeping at done (Strict).
func (c *Checker) closeStrict(reason string) error {
	var open []string
	for id, st := range c.tools {
		if st == 1 {
			open = append(open, id)
		}
	}
	if len(open) > 0 {
		sort.Strings(open)
		return fmt.Errorf("tool call %s has no tool_end", quoteShort(open[0]))
	}
	for id, pending := range c.approvals {
		if pending {
			return fmt.Errorf("approval %s still pending at done", quoteShort(id))
		}
	}
	switch reason {
	case StopBlocked:
		if c.asked {
			return fmt.Errorf("done blocked after the model was asked: a refused prompt sends nothing to the model")
		}
	case StopError:
		if !c.afterErr {
			return fmt.Errorf("stop_reason error must directly follow an error line")
		}
	case StopTruncated:
		if !c.afterErr {
			return fmt.Errorf("stop_reason truncated must directly follow an error line")
		}
	default:
		if c.turnError {
			return fmt.Errorf("a turn with an error line must end error or truncated, not %s", quoteShort(reason))
		}
	}
	return nil
}

// End reports what the stream left unfinished at EOF.
func (c *Checker) End() error {
	switch {
	case !c.helloSeen:
		return fmt.Errorf("no hello: the stream is empty")
	case c.wantTx:
		return fmt.Errorf("a continued hello was never followed by transcript")
	case c.turn:
		return fmt.Errorf("the stream ended inside a turn: its done never came")
	}
	return c.endInput()
}

// Verdict is the result for one input line; Line 0 is the end of the stream.
type Verdict struct {
	Line int
	Err  error
}

// MaxCheckedLine is the longest stdout line the checker reads whole; a
// longer one is a violation and is skipped without being held in memory.
const MaxCheckedLine = 64 << 20

// CheckStream validates every line of r, calling report for each verdict in
// order (including the end-of-stream verdict when it fails). It returns the
// number of violations.
func CheckStream(r io.Reader, report func(Verdict)) (int, error) {
	return NewChecker().Stream(r, report)
}

// CheckStreamStrict is CheckStream with Strict: openmax's own habits too.
func CheckStreamStrict(r io.Reader, report func(Verdict)) (int, error) {
	return NewChecker(Strict()).Stream(r, report)
}

// Stream validates every line of r with c, like CheckStream. Each line is
// read once and parsed once. Memory stays near heldLine whatever the input:
// a longer line is spooled to a temporary file until its end shows whether
// it is within MaxCheckedLine, and only then read back whole.
//
// With more than one CPU and a reader that is not already in memory (a
// pipe, a file), lines are prepared by GOMAXPROCS workers and finished in
// order on the calling goroutine (check_parallel.go); report is always
// called from the calling goroutine, in line order.
func (c *Checker) Stream(r io.Reader, report func(Verdict)) (int, error) {
	_, inMemory := r.(interface{ Len() int })
	if workers := runtime.GOMAXPROCS(0); workers > 1 && !inMemory && !c.twoPass {
		return c.streamParallel(r, report, parallelConfig{workers: workers})
	}
	return c.streamSerial(r, report, parallelConfig{})
}

// streamSerial is Stream on the calling goroutine alone: for a stream
// already in memory (a replay's output, a test's), where starting workers
// costs more than it saves, and for one CPU.
func (c *Checker) streamSerial(r io.Reader, report func(Verdict), cfg parallelConfig) (int, error) {
	cfg = cfg.withDefaults()
	lr := newLineSplitter(r, cfg.longest, cfg.inMemory, cfg.readBuf)
	defer lr.close()
	bad := 0
	for {
		line, size, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			if err := c.End(); err != nil {
				bad++
				report(Verdict{Line: 0, Err: err})
			}
			return bad, nil
		case errors.Is(err, errLineTooLong):
			bad++
			err := c.tooLong(size)
			report(Verdict{Line: c.n, Err: err})
			continue
		case err != nil:
			return bad, fmt.Errorf("read: %w", err)
		}
		v := Verdict{Err: c.Line(line)}
		v.Line = c.n
		if v.Err != nil {
			bad++
		}
		report(v)
	}
}

// tooLong counts a line longer than MaxCheckedLine, of size bytes, and
// returns its violation.
func (c *Checker) tooLong(size int64) error {
	c.n++
	c.prev = ""
	return fmt.Errorf("%d bytes: longer than the checker reads (%d MiB)", size, MaxCheckedLine>>20)
}

// streamReadBuffer is Stream's read buffer: lines up to this size are
// checked in place, without a copy.
const streamReadBuffer = 256 << 10

// heldLine is how much of a longer line Stream gathers in memory before it
// spools the line to a temporary file. Lines past it are rare (openmax caps
// tool output and transcripts far below), and spooling them keeps a 1 GiB
// line from costing more than this.
const heldLine = 1 << 20

// AppendLine appends the line `openmax --check` prints for v, without its
// newline: "N: ok", "N: <violation>", or "end: <violation>" for the end of
// the stream.
func (v Verdict) AppendLine(b []byte) []byte {
	if v.Line == 0 {
		b = append(b, "end: "...)
		if v.Err == nil {
			return append(b, "<nil>"...)
		}
		return append(b, v.Err.Error()...)
	}
	b = append(appendLineNumber(b, v.Line), ':', ' ')
	if v.Err == nil {
		return append(b, 'o', 'k')
	}
	return append(b, v.Err.Error()...)
}

// decimalPairs holds 00 to 99, two bytes each.
const decimalPairs = "0001020304050607080910111213141516171819" +
	"2021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859" +
	"6061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendLineNumber is strconv.AppendInt(b, n, 10) for the line numbers of
// verdicts, writing the digits in place: a valid stream has one verdict a
// line, and the copies strconv makes were a visible part of reporting them.
func appendLineNumber(b []byte, n int) []byte {
	if n < 0 {
		return strconv.AppendInt(b, int64(n), 10)
	}
	digits := 1
	for x := n; x >= 10; x /= 10 {
		digits++
	}
	b = slices.Grow(b, digits)
	b = b[:len(b)+digits]
	i := len(b)
	u := uint(n)
	for u >= 100 {
		q := u / 100
		r := (u - q*100) * 2
		i -= 2
		b[i], b[i+1] = decimalPairs[r], decimalPairs[r+1]
		u = q
	}
	if u >= 10 {
		b[i-2], b[i-1] = decimalPairs[2*u], decimalPairs[2*u+1]
	} else {
		b[i-1] = byte('0' + u)
	}
	return b
}
