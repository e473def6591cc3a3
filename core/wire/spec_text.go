package wire

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// This file renders the contract held by Commands, Events, Lines and
// StopReasons for people (WriteSpec); spec_jsonschema.go renders it for
// machines (WriteJSONSchema). Everything about individual commands, events,
// lines and fields is read from the Defs; only the protocol-wide prose below
// is written by hand.

// specWidth is the column WriteSpec wraps prose at.
const specWidth = 80

// specIntro is the protocol-wide prose WriteSpec opens with, one entry per
// section: a heading and its paragraphs.
var specIntro = []struct {
	Heading    string
	Paragraphs []string
}{
	{"FRAMING", []string{
		"Traffic flows as UTF-8 text in both directions, exactly one JSON object per line: commands arrive on stdin, and everything openmax reports leaves on stdout.",
		"A line that is not valid UTF-8, or that runs past 8 MiB, earns a protocol_error and is thrown away; reading picks up again after the next newline, and the session carries on untouched. Lines holding nothing are passed over silently.",
		"A cmd value openmax does not recognise is answered with a protocol_error. Members a known command does not define are disregarded, so clients may attach their own bookkeeping. Reaching end of input on stdin has the same effect as a quit command.",
	}},
	{"HANDSHAKE", []string{
		"Before anything else, openmax writes a hello line naming the protocol (proto and the integer protocol_version) and the session. A transcript line may appear only as the very next line, and only when that hello has continued set to true; it lets a client draw the resumed history without any events being replayed.",
	}},
	{"KEY ORDER AND SESSION_ID", []string{
		"openmax writes an event's session_id first, its type second and its own fields after that, in the order listed below. Any other stdout line starts with type, followed by its fields in the listed order. This ordering is a courtesy to human readers only: JSON object members carry no order, so a client must look every member up by its name.",
		"The session_id member is present on every event and on the hello and transcript lines. The two remaining stdout lines, protocol_error and the approval_mode acknowledgement, never carry it.",
	}},
	{"SESSION OWNERSHIP", []string{
		"Resuming with --continue needs a session whose index and transcript can be read and that no other process holds open for writing; otherwise openmax says why on stderr and exits nonzero before writing hello. Once it has the session, the process keeps it for as long as it runs, idle time between turns included.",
	}},
	{"APPROVALS AND MODES", []string{
		"The approval mode (auto, ask or readonly) belongs to a trusted project, keyed by its canonical path (symbolic links resolved), and is kept across restarts. approval_mode is refused with a protocol_error in a project that is not trusted, and in an openmax that an agent's tool started (OPENMAX_AGENT_SPAWNED in its environment or an ancestor's, or an openmax among its parent processes, however it exec'd or daemonized): a model cannot loosen its own gate. Such an openmax also refuses openmax trust and openmax --approve. A mode is acknowledged only once it is saved; when the save fails the mode stays as it was and the protocol_error says so.",
		"In auto no approval_request is ever written, not even for an external tool whose files changed; deny rules and argument checks still refuse calls in every mode. A request written in ask stays open until it is answered or cancelled, even when the mode changes meanwhile. While a client is connected openmax waits for its approve; after quit or end of input, open and later requests are declined so that shutdown is quick. An approve for an id never issued, or already settled, is a protocol_error.",
	}},
	{"EXTERNAL TOOLS AND CREDENTIAL GRANTS", []string{
		"A tool defined in the project (a manifest and code the agent could have written) is always gated. Its first call after any change to those files' exact bytes raises an approval_request with reason unapproved_source, naming the project-relative source_path and the first 12 hex digits of its sha256 as source_sha. An unattended client must never approve one of these by itself. A human approval is remembered for those exact bytes; openmax --approve SOURCE_PATH gives it from a terminal.",
		"approval_request.env lists the names of the environment variables the tool will receive, taken from its manifest's allowlist: approving the call grants them. The key is left out when the list is empty. A client shows it on a line of its own that is never cut short, and never folds it into detail.",
	}},
	{"HOOKS", []string{
		"Hooks are programs the user or the project configures. A refusing user_prompt_submit hook ends the command with done blocked, and nothing reaches the model. A turn_end hook that refuses a completed reply has its reason added to the transcript as a user message, saved to disk before turn_refused is written, and the turn goes on with no command from the client; continuation and continuations_left are the counts the hook was given. Past 8 refusals, or when a refusal cannot be saved, the turn ends with done unverified. A hook that fails to run is reported with hook_failed and the turn proceeds.",
	}},
}

// specGuarantees are the turn-level promises WriteSpec closes with.
var specGuarantees = []string{
	"A user command is answered by one done and never more than one; done is the single line a client can always count on, so it should never wait for anything else.",
	"Exception: a user sent while another turn is still running gets a protocol_error and nothing further, because the running turn already owns the next done.",
	"For a turn that was admitted, done is written only after the turn has let go of its running state and its cancellation, so the next user command can be sent the moment done arrives.",
	"If the stream stops mid-answer without a completion signal, the partial text still arrives in a message_done (and is kept in the session), then an error line, then done with stop_reason truncated. No tool call from such a stream is executed.",
	"If the provider stream fails after some token lines were already sent, an error line comes next and then done with stop_reason error; no message_done is sent and the partial text is discarded.",
	"A turn that dies unexpectedly still reports itself: an error line, then done with stop_reason error.",
	"A user command whose text is empty (or that cannot start a turn for another reason, such as an untrusted project) gets a protocol_error and then done with stop_reason refused.",
	"When the process exits, its status is 1 if the last turn ended with stop_reason error, 2 if --continue found no earlier session to resume, and 0 in every other case, max_iterations, budget_exhausted and unverified included: a stdio client reads done and decides. openmax -p, which has no done to read, exits 4 on those three.",
}

// WriteSpec writes the protocol contract as plain text: framing, handshake
// and key-order rules, then every command, event and other line with its
// fields, the stop_reason table and the turn guarantees. The per-definition
// sections are derived from Commands, Events, Lines and StopReasons. The
// output is the same on every call.
func WriteSpec(w io.Writer) error {
	bw := bufio.NewWriter(w)
	s := &specWriter{w: bw}

	s.line(0, fmt.Sprintf("%s wire protocol (protocol_version %d)", Proto, ProtocolVersion))
	s.blank()
	for _, sec := range specIntro {
		s.line(0, sec.Heading)
		for i, p := range sec.Paragraphs {
			if i > 0 {
				s.blank()
			}
			s.wrap(2, 2, p)
		}
		s.blank()
	}

	s.line(0, "COMMANDS (stdin, one JSON object per line, selected by cmd)")
	for _, d := range Commands {
		s.def(d)
	}
	s.line(0, "EVENTS (stdout, session_id then type then fields)")
	for _, d := range Events {
		s.def(d)
	}
	s.line(0, "OTHER STDOUT LINES (type then fields)")
	for _, d := range Lines {
		s.def(d)
	}

	s.line(0, "STOP REASONS (done.stop_reason)")
	for _, r := range StopReasons {
		s.line(2, r.Name)
		s.wrap(6, 6, r.Doc)
	}
	s.blank()

	s.line(0, "TURN GUARANTEES")
	for _, g := range specGuarantees {
		s.wrap(2, 4, "- "+g)
	}

	if s.err != nil {
		return s.err
	}
	return bw.Flush()
}

// specWriter writes indented, wrapped lines and remembers the first error.
type specWriter struct {
	w   *bufio.Writer
	err error
}

func (s *specWriter) line(indent int, text string) {
	if s.err != nil {
		return
	}
	if text == "" {
		_, s.err = s.w.WriteString("\n")
		return
	}
	_, s.err = s.w.WriteString(strings.Repeat(" ", indent) + text + "\n")
}

func (s *specWriter) blank() { s.line(0, "") }

// wrap writes text as words filled to specWidth, the first line indented by
// first and the rest by rest. A word longer than the width stands alone.
func (s *specWriter) wrap(first, rest int, text string) {
	indent := first
	var cur []string
	width := indent
	for _, word := range strings.Fields(text) {
		if len(cur) > 0 && width+1+len(word) > specWidth {
			s.line(indent, strings.Join(cur, " "))
			indent, cur, width = rest, nil, rest
		}
		if len(cur) > 0 {
			width++
		}
		cur = append(cur, word)
		width += len(word)
	}
	if len(cur) > 0 {
		s.line(indent, strings.Join(cur, " "))
	}
}

// def writes one command, event or line: its name, its prose, the keys in
// the order openmax writes them, and every field.
func (s *specWriter) def(d *Def) {
	s.line(2, d.Name)
	s.wrap(6, 6, d.Doc)
	keys := specEnvelopeKeys(d)
	for _, f := range d.Fields {
		if !contains(keys, f.Name) {
			keys = append(keys, f.Name)
		}
	}
	switch d.Role {
	case RoleCommand:
		s.wrap(6, 8, fmt.Sprintf("shape: cmd %q, then %s", d.Name, specFieldList(d.Fields)))
	default:
		s.wrap(6, 8, "key order: "+strings.Join(keys, ", "))
	}
	if d.Role == RoleEvent && !hasField(d.Fields, "session_id") {
		s.line(6, "session_id (string, required, non-empty)")
		s.wrap(10, 10, "the session this event belongs to, as announced by hello")
	}
	s.fields(6, d.Fields)
	s.blank()
}

// specEnvelopeKeys lists the members a definition's lines carry beyond its
// fields, in the order openmax writes them.
func specEnvelopeKeys(d *Def) []string {
	switch d.Role {
	case RoleCommand:
		return []string{"cmd"}
	case RoleEvent:
		return []string{"session_id", "type"}
	}
	if d.SessionID && !hasField(d.Fields, "session_id") {
		return []string{"type", "session_id"}
	}
	return []string{"type"}
}

func specFieldList(fields []Field) string {
	if len(fields) == 0 {
		return "no fields"
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return "fields " + strings.Join(names, ", ")
}

func (s *specWriter) fields(indent int, fields []Field) {
	for i := range fields {
		f := &fields[i]
		s.wrap(indent, indent+4, fmt.Sprintf("%s (%s)", f.Name, specDescribeField(f)))
		if f.Doc != "" {
			s.wrap(indent+4, indent+4, f.Doc)
		}
		if sub := specElementFields(f); sub != nil {
			s.line(indent+4, "each element has:")
			s.fields(indent+6, sub)
		}
	}
}

// specElementFields returns the member fields of an object field, or of an
// array field's object elements.
func specElementFields(f *Field) []Field {
	if f.Object != nil {
		return f.Object
	}
	if f.Items != nil && f.Items.Object != nil {
		return f.Items.Object
	}
	return nil
}

// specDescribeField says a field's JSON type and constraints in one phrase.
func specDescribeField(f *Field) string {
	parts := []string{specKindPhrase(f)}
	if f.Optional {
		parts = append(parts, "optional")
		if f.Kind == KindArray {
			parts = append(parts, "omitted rather than empty")
		}
	} else {
		parts = append(parts, "required")
	}
	parts = append(parts, specConstraints(f)...)
	return strings.Join(parts, ", ")
}

func specKindPhrase(f *Field) string {
	k := string(f.Kind)
	switch {
	case f.Kind == KindObject && f.Object == nil:
		k = "object, any members"
	case f.Kind == KindArray && f.Items != nil:
		k = "array of " + specKindPhrase(f.Items)
		if c := specConstraints(f.Items); len(c) > 0 {
			k += " (" + strings.Join(c, ", ") + ")"
		}
	}
	if f.Nullable {
		k += " or null"
	}
	return k
}

func specConstraints(f *Field) []string {
	var out []string
	if f.Kind == KindInteger && f.Const == "" {
		out = append(out, "at least 0")
	}
	if f.NonEmpty {
		out = append(out, "non-empty")
	}
	if len(f.Enum) > 0 {
		out = append(out, "one of "+strings.Join(f.Enum, ", "))
	}
	if f.Const != "" {
		out = append(out, "always "+f.Const)
	}
	return out
}
