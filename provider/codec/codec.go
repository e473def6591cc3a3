// Package codec is the registry of vendor wires: the one place that
// answers "which wire is this?" for the fake provider, the replay
// transport, the cassette tools (show, inject, sweep, import) and the
// harness's --provider selection.
//
// A vendor package registers its wire once, from an init function, in the
// style of database/sql drivers:
//
//	func init() { codec.Register(wire{}) }
//
// and package provider/vendors imports every built-in vendor for its side
// effect, so a binary or a consumer that needs them all imports that one
// package. Everything wire-specific lives behind the Wire interface, in
// the vendor's package: how a request or a recorded body is recognised,
// how the vendor's reply, in-stream error event and HTTP error body are
// written, how a recorded body is split into events with byte offsets and
// what each event carries, how a request body is read, and how a client is
// built from its credentials. A consumer never names a vendor; a request
// or a recording no registered wire claims is an error (ErrUnknownWire),
// never a guess at some default vendor.
//
// Concurrency: Register is called only during package initialisation (it
// panics on a duplicate or incomplete registration), so the set of wires is
// fixed before main runs. Every lookup (Lookup, Wires, Names, ForProvider,
// APIs, ForRequest, ForRecording, Providers, CredentialEnv, SecretHeaders,
// SecretQuery, IsSecretHeader, IsSecretQuery, IsShownHeader) is safe for
// concurrent use,
// and so must be every method of a registered Wire: a wire is a stateless
// description, and the state of one reply lives in the Encoder it makes.
//
// The package imports only package provider and the standard library, so
// any vendor package can register without an import cycle.
package codec

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openmax/openmax/provider"
)

// Wire is one vendor wire protocol: an HTTP API a model is called
// through. Its methods must be safe for concurrent use and must not
// modify their arguments.
type Wire interface {
	// Info is the wire's fixed description.
	Info() Info

	// Claim says how surely a request belongs to the wire, from its
	// method, path, query and headers alone (see Claim). A wire that
	// names the model in the path (Gemini, Vertex AI, Bedrock) claims its
	// endpoints by their path pattern.
	Claim(r *Request) Claim
	// ClaimBody reports whether a recorded response body (its
	// Content-Type, possibly empty, and bytes) is unmistakably the wire's:
	// the fallback for a recording whose request no wire claims (a proxy
	// path, a cassette from another tool). It must not claim a body
	// another wire could have sent.
	ClaimBody(contentType string, body []byte) bool

	// ReadRequest reads what a request to the wire asks: the model (from
	// the body, or from the path for a wire that names it there), whether
	// the reply streams, the user's text, the tools offered and the tool
	// results sent back. It fails when the body is not the wire's request
	// at all (not JSON); a part it could not read, in a body that is
	// otherwise the wire's, goes in Call.Partial.
	ReadRequest(r *Request, body []byte) (*Call, error)

	// NewEncoder returns an encoder of one streamed reply (see Encoder).
	NewEncoder(r Reply) Encoder
	// Whole renders r.Parts as one complete (not streamed) response body,
	// application/json. ok is false when the parts carry no Finish.
	Whole(r Reply) (body []byte, ok bool)
	// ImpliedFinish is a finish reason as the wire says it, for a reason
	// given in the fake provider's shorthand (stop, tool_calls): end_turn
	// and tool_use on Anthropic's wire, unchanged on OpenAI's.
	ImpliedFinish(reason string) string

	// StatusMessage is the message the vendor sends with an HTTP error
	// status, "" when it has none of its own.
	StatusMessage(status int) string
	// HTTPError is the vendor's error response for f: its body
	// (application/json) and any headers beyond Content-Type that carry
	// the error (Bedrock's x-amzn-ErrorType), nil when none.
	HTTPError(f Failure) (body []byte, header http.Header)
	// StreamFailure is the failure an in-stream error event carries for a
	// vendor error code, with the message the vendor sends with it; code
	// "" is the wire's default in-stream failure (server_error on OpenAI's
	// wires, overloaded_error on Anthropic's). ok is false for a code the
	// vendor has no message of its own for.
	StreamFailure(code string) (f *provider.StreamError, ok bool)
	// ErrorEvent is the in-stream event that fails a stream with f, to
	// follow kept, the part of the recorded body that precedes it (whole
	// events only); body is the whole recorded body. A wire whose events
	// are numbered or name their response (the Responses API's
	// response.failed) reads both.
	ErrorEvent(kept, body []byte, f *provider.StreamError) []byte

	// Parse reads a recorded response body: a stream is split into the
	// wire's events (SSE events, eventstream frames) with their byte
	// offsets, each saying what it carries; a whole response or an error
	// body is read as one. contentType is the recorded Content-Type, ""
	// when none was recorded (the wire then goes by how the body starts).
	// Parse never fails: what it cannot read it reports (Event.Unparsed,
	// Reading.Tail) and leaves out.
	Parse(contentType string, body []byte) *Reading

	// NewClient builds the vendor's client (a provider.Provider making
	// one HTTP attempt per Stream call; retries and redaction are the
	// caller's) from the credentials in the environment. The client
	// classifies every failure in package provider's types and maps the
	// vendor's retry hints into them (a Retry-After header, a retry delay
	// in the body, an exception type: HTTPError.RetryAfter and Code), so
	// provider/retry decides without knowing the vendor.
	NewClient(c ClientConfig) (provider.Provider, error)
}

// FailureStatuser is a Wire that says the HTTP status a whole (not
// streamed) reply answers with when it fails with the stream error type
// typ (Bedrock's throttlingException is 429); ok false, or a wire without
// the method, leaves the fake provider's default (529 for an overload,
// 429 for a rate limit, else 500).
type FailureStatuser interface {
	FailureStatus(typ string) (status int, ok bool)
}

// Info is a wire's fixed description.
type Info struct {
	// Name identifies the wire in the registry, in recordings and in
	// fake-provider scenarios: openai (Chat Completions), responses (the
	// OpenAI Responses API), anthropic (Messages). Unique.
	Name string
	// Provider is the --provider value that selects the wire, and API the
	// --api value that picks it among that provider's wires (chat,
	// responses; "" when the provider has no other). Several wires may
	// share a provider (openai serves Chat Completions and, with --api
	// responses, the Responses API); the pair is unique.
	Provider, API string
	// Default marks the wire --provider selects without --api: exactly
	// one wire of each provider.
	Default bool
	// Endpoints are the request paths a client of the wire posts to, as a
	// person reads them (for error messages and documentation); a path
	// that names the model shows it in braces,
	// /v1beta/models/{model}:streamGenerateContent.
	Endpoints []string
	// StreamType is the Content-Type header of a streamed reply as the
	// vendor sends it: "text/event-stream; charset=utf-8", or
	// "application/vnd.amazon.eventstream".
	StreamType string
	// DefaultModel is the model the harness asks for when --model is not
	// given.
	DefaultModel string
	// CredentialEnv are the environment variables whose values are the
	// wire's credentials (OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY): never
	// written anywhere, and removed from what a reply carries.
	CredentialEnv []string
	// ShownHeaders are the response headers, by name or by a prefix
	// ending in "-" (x-ratelimit-), that steer the vendor's clients
	// (rate-limit state, error types) beyond the ones every vendor shares
	// (Content-Type, Date, Retry-After, request ids): `cassette show`
	// prints them. Case-insensitive.
	ShownHeaders []string
	// SecretHeaders and SecretQuery are the request header and query
	// parameter names that carry credentials (x-api-key, x-goog-api-key,
	// key, X-Amz-Security-Token), case-insensitive: the recorder's
	// scrubber (recorder.SecretHeader, recorder.SecretParam) replaces
	// their values in every cassette, and `cassette show` never prints
	// them.
	SecretHeaders, SecretQuery []string
	// Signed reports that the wire's requests carry a signature over
	// their content and time (SigV4): a recorded request cannot be sent
	// again as it is, and `cassette verify --live` says so rather than
	// send it unsigned.
	Signed bool
}

// Request is what a wire is recognised by: a request as sent, or as
// recorded.
type Request struct {
	// Method is the HTTP method, POST for a model call.
	Method string
	// URL is the request URL; only its path and query matter (a recorded
	// URL's host is wherever the recording was made).
	URL *url.URL
	// Header holds the request headers; nil for none.
	Header http.Header
}

// NewRequest is the Request of an HTTP request.
func NewRequest(r *http.Request) *Request {
	return &Request{Method: r.Method, URL: r.URL, Header: r.Header}
}

// RecordedRequest is the Request of a recorded one: its method, its URL
// as recorded (a URL that does not parse is taken as a bare path and
// query) and its headers.
func RecordedRequest(method, rawURL string, h http.Header) *Request {
	u, err := url.Parse(rawURL)
	if err != nil {
		u = &url.URL{}
		u.Path, u.RawQuery, _ = strings.Cut(rawURL, "?")
	}
	return &Request{Method: method, URL: u, Header: h}
}

// Path is the request's escaped path, "/" when empty.
func (r *Request) Path() string {
	if r.URL == nil {
		return "/"
	}
	if p := r.URL.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// String names the request for an error message: "POST /v2/foo".
func (r *Request) String() string {
	m := r.Method
	if m == "" {
		m = "(no method)"
	}
	return m + " " + r.Path()
}

// Claim is how surely a request belongs to a wire.
type Claim int

const (
	// ClaimNone: the request is not the wire's.
	ClaimNone Claim = iota
	// ClaimHint: something only the vendor's clients send marks the
	// request as the vendor's, on a path that is not one of the wire's
	// model-call endpoints: an anthropic-version header, a path below
	// /v1/messages (count_tokens). Enough to answer in the vendor's error
	// shape, not to serve a reply.
	ClaimHint
	// ClaimEndpoint: the path is one of the wire's model-call endpoints
	// (whatever the headers say). A server of the wire answers it.
	ClaimEndpoint
)

// Call is what a request to a wire asks for (Wire.ReadRequest).
type Call struct {
	// Model is the model the request names, "" when it names none.
	Model string
	// Stream reports whether the request asks for a streamed reply.
	Stream bool
	// UserText is the text of the last user message that has any, "" when
	// none does.
	UserText string
	// HasUser reports whether the request holds a user message at all.
	HasUser bool
	// UserHolds are the kinds of content the last user message holds
	// (text, image, tool_result, ...), as the vendor names them: what a
	// request without user text sent instead.
	UserHolds []string
	// Tools are the function tools offered, in order.
	Tools []provider.ToolSpec
	// Results are the tool results at the end of the conversation (what
	// the request sends back for the previous reply's calls), in order,
	// each named after the call it answers.
	Results []Result
	// Partial is what could not be read of a body that is otherwise the
	// wire's (a Responses input that is neither a string nor a list of
	// items); nil when all of it was.
	Partial error
	// Summary describes the request for a person, in the vendor's terms:
	// "model gpt-4o", "stream", "3 messages", `last user "Hi"`; nil when
	// the body does not read as the wire's request.
	Summary []string
}

// Result is a tool's result sent back in a request.
type Result struct {
	// Name is the tool of the call the result answers, "" when the request
	// does not show the call.
	Name string
	// OK is false for a result the request marks as an error.
	OK     bool
	Output string
}

// Failure is an HTTP error response a wire writes (Wire.HTTPError).
type Failure struct {
	// Status is the HTTP status.
	Status int
	// Type is the vendor's error type or code (rate_limit_error,
	// insufficient_quota, ThrottlingException), as a fake-provider
	// scenario names it; "" for the type the vendor gives Status. A wire
	// whose error has a code beside its type writes Type in both unless
	// Code is given.
	Type string
	// Code is a machine-readable code for a wire whose error has a field
	// for one beside the type (OpenAI's "code": replay_miss), the type
	// staying the vendor's for Status when Type is ""; a wire without such
	// a field leaves it out.
	Code string
	// Message is the error's message; "" for the vendor's usual one (its
	// StatusMessage, else the status text).
	Message string
}

// Reply is what the encoders of a wire are given to write one reply.
type Reply struct {
	// Seq numbers the reply among those one server wrote (1-based); the
	// wire derives the reply's id from it (chatcmpl-fake-1, msg_fake_1).
	Seq int
	// Model is the model the reply names.
	Model string
	// Created is the reply's creation time, in Unix seconds, for the wires
	// that state one.
	Created int64
	// Parts is the whole reply when it is known before the first byte is
	// written (a wire that states the usage at the start of a stream reads
	// it here), and what Whole renders; nil when unknown.
	Parts []provider.Part
}

// Encoder writes one reply as the events of the wire's stream: Open, then
// Part for each part in order, then Close. The bytes of each call are
// whole events (SSE events, eventstream frames), ready to be flushed. An
// Encoder is used by one goroutine.
type Encoder interface {
	// Open is the event(s) that start the stream, possibly none.
	Open() []byte
	// Part renders one part. An Error part renders the wire's in-stream
	// error event and ends the stream: later calls return nothing.
	Part(p provider.Part) []byte
	// Close ends a stream whose parts ran out: the terminator when the
	// reply finished, nothing otherwise (a stream that just stops).
	Close() []byte
}

// Reading is a recorded response body as a wire reads it (Wire.Parse):
// its events, and what the reply says, put together from them.
type Reading struct {
	// Stream reports whether the body was read as a stream of events.
	Stream bool
	// Events are the events of a stream, in order, each with its byte
	// range in the body.
	Events []Event
	// Tail is the size of the body's tail after the last whole event: an
	// event the body never finishes; 0 when it ends at a boundary.
	Tail int
	// EndParts are the parts the vendor's client yields once the body
	// ends: for a whole response, all of them; for a stream, those no
	// event carries (the Error of a stream cut short, or the tool calls
	// and Finish of one cut after its finish reason). The events' Parts
	// followed by EndParts are what the client yields for the body.
	EndParts []provider.Part

	// MessageID and Model are what the reply names itself and its model,
	// "" when it does not.
	MessageID, Model string
	// Text is the reply's text, all of it in order.
	Text string
	// Phases are the phases the reply's messages carry (the Responses
	// API's commentary, final_answer), in order.
	Phases []string
	// Refusal is what the model refused with (the Responses API's refusal
	// content), "" when it did not.
	Refusal string
	// Reasoning are the reply's reasoning items (the Responses API's), in
	// the order they appeared.
	Reasoning []Reasoning
	// Thinking is the reply's reasoning text (Anthropic's thinking, Chat
	// Completions' reasoning_content).
	Thinking string
	// Signatures counts the thinking signatures, and SignatureBytes holds
	// each one's length where the event gave it as a string.
	Signatures     int
	SignatureBytes []int
	// Tools are the tool calls, in the order the client hands them over;
	// Args as streamed, "" when none were.
	Tools []ToolCall
	// Finish is the finish or stop reason (for the Responses API the
	// terminal status, with an incomplete reply's reason in parentheses).
	Finish string
	// Usage is the reply's token usage, nil when it states none.
	Usage *Usage
	// Errors are the vendor's failures the body reports: its in-stream
	// error events, or the error of an error body, each as "type, code
	// CODE: message" (the parts the vendor gave).
	Errors []string
	// Signal is the stream's completion signal as the wire names it
	// ([DONE], message_stop, response.completed), "" when none came.
	Signal string
}

// Unparsed counts the events whose data the wire could not read.
func (r *Reading) Unparsed() int {
	n := 0
	for _, e := range r.Events {
		if e.Unparsed {
			n++
		}
	}
	return n
}

// Event is one event of a recorded stream.
type Event struct {
	// Start and End are the event's byte range [Start, End) in the body:
	// End is just past what dispatched it (an SSE event's blank line, an
	// eventstream frame's CRC). Start is the previous event's End (0 for
	// the first), so the bytes between events (SSE comments) belong to
	// the event after them.
	Start, End int
	// Name is the event's name as the wire gives it (an SSE event field,
	// an eventstream :event-type header), "" when none.
	Name string
	// Parts is what the event carries in the provider's terms, as the
	// vendor's own client parser yields them from it: deltas of text and
	// thinking (a signature closing a block), a ToolCallPart at the event
	// that completes the call, Usage, Finish, Error.
	Parts []provider.Part
	// Notes say what the event holds, for a person, in order (see Note).
	Notes []Note
	// Unparsed reports that the event's data could not be read.
	Unparsed bool
}

// Note is one thing an event says, for a chunk-by-chunk account of a
// recording. A note of kind NoteText, NoteThinking, NoteArgs,
// NoteSummary or NoteRefusal carries content in Text, and a run of them of
// one kind reads as one; any other Kind is a label by itself ("text
// block", "tool get_weather", "finish stop", "[DONE]", `error event
// "overloaded_error: Overloaded"`).
type Note struct {
	Kind string
	Text string
}

// The kinds of Note that carry content.
const (
	NoteText     = "text"
	NoteThinking = "thinking"
	NoteArgs     = "args"
	NoteSummary  = "summary"
	NoteRefusal  = "refusal"
)

// Reasoning is a reasoning item of a reply (the Responses API's).
type Reasoning struct {
	// Index is its output index.
	Index int
	// ID is its item id, "" when none was given.
	ID string
	// Summary are its summary parts' texts, Text its streamed reasoning
	// text.
	Summary []string
	Text    string
	// Encrypted is the encrypted content a client sends back, From the
	// event it was last seen in (output_item.done, completed, response),
	// HasEncrypted whether there was any.
	Encrypted, From string
	HasEncrypted    bool
}

// ToolCall is a tool call as recorded.
type ToolCall struct {
	ID, Name string
	// Args are the arguments as streamed, "" when none were.
	Args string
}

// Usage is a reply's token accounting as recorded. Cached and Reasoning
// are nil when the vendor did not say.
type Usage struct {
	Input, Output, Total int
	Cached, Reasoning    *int
}

// Poster sends one model request: httpx.Client in openmax, which adds
// the idle, header and reply deadlines and the reply size cap. A wire's
// client may require that type (NewClient fails for another).
type Poster interface {
	Post(ctx context.Context, url string, header http.Header, body []byte) (*http.Response, error)
}

// ClientConfig is what Wire.NewClient builds a client from.
type ClientConfig struct {
	// BaseURL is the --base-url flag, "" when not given: the wire then
	// takes its base URL variable (OPENAI_BASE_URL) or the vendor's.
	BaseURL string
	// Model is the --model flag, "" for Info.DefaultModel.
	Model string
	// HTTP sends the requests.
	HTTP Poster
	// Getenv reads the environment (credentials, base URL variables,
	// region); never nil.
	Getenv func(string) string
}

// BaseURLOr is the base URL to use: BaseURL, else the value of the
// variable env, trimmed; "" for the vendor's default.
func (c ClientConfig) BaseURLOr(env string) string {
	if b := strings.TrimSpace(c.BaseURL); b != "" {
		return b
	}
	return strings.TrimSpace(c.Getenv(env))
}

// ModelOr is the model to ask for: Model, trimmed, else def.
func (c ClientConfig) ModelOr(def string) string {
	if m := strings.TrimSpace(c.Model); m != "" {
		return m
	}
	return def
}

// MissingCredential is the error of a client built without its
// credentials: "--provider openai needs an API key: set OPENAI_API_KEY".
func MissingCredential(providerName, what, env string) error {
	return fmt.Errorf("--provider %s needs %s: set %s", providerName, what, env)
}
