// Package gemini is Google's Gemini wire both ways: the Gemini API
// (generativelanguage, an API key in x-goog-api-key) and Vertex AI (the
// same wire under a project and location, an OAuth access token as a
// bearer). It holds the client the live harness streams replies with
// (models/{model}:streamGenerateContent?alt=sse, or :generateContent),
// the encoder the fake provider and fault injection write replies with,
// the reader of recorded streams with each event's byte offsets (Events),
// and the reader of recorded requests (ReadRequest).
//
// The wire: a request is one GenerateContentRequest (contents of role
// user and model made of parts, a systemInstruction, function
// declarations); a streamed reply is Server-Sent Events, each a data line
// holding one GenerateContentResponse chunk and ended by a blank line
// (CRLF line ends), with no event names, ids or terminator: the chunk
// whose candidate has a finishReason completes the reply, and the stream
// just ends after it. An error is a google.rpc.Status object
// ({"error":{"code","message","status","details"}}), as the body of an
// error status or as the data of an event. One Stream call is one
// attempt; retries belong to provider/retry, which decides from the
// failure types of package provider.
package gemini

import (
	"encoding/json"
	"net/url"
	"strings"
)

// The wire's shapes, declared once for both directions. Field names are
// the API's lowerCamelCase JSON names; ReadRequest also takes the
// snake_case names the API accepts in requests. Fields only some readers
// need, or that the client never reads, are json.RawMessage, so a server
// sending them in another shape cannot fail a chunk.

// Request is the body of a generateContent or streamGenerateContent call.
// The model and the streaming mode are in the path, not here.
type Request struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
}

// Content is one turn of the conversation (role user or model; a
// systemInstruction has none), or a candidate's content in a reply.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one part of a Content: text (a thought when Thought is set), a
// function call, or a function response. ThoughtSignature is the opaque
// signature the model gave the part (base64); it must go back on the same
// part of the next request. Kinds the client neither sends nor reads
// (inline data, files, code execution) stay raw.
type Part struct {
	Text             *string           `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`

	InlineData          json.RawMessage `json:"inlineData,omitempty"`
	FileData            json.RawMessage `json:"fileData,omitempty"`
	ExecutableCode      json.RawMessage `json:"executableCode,omitempty"`
	CodeExecutionResult json.RawMessage `json:"codeExecutionResult,omitempty"`
}

// FunctionCall is a call the model made: whole, with its arguments as a
// JSON object. The Gemini API gives it no id; a client may give one, and
// the function response that answers it then carries the same.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is a tool's result sent back: Response is a JSON
// object, by Google's convention {"output": ...} for a result and
// {"error": ...} for a failure.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Tool offers function declarations.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations,omitempty"`
}

// FunctionDeclaration describes a function the model may call. Its
// arguments are described either by Parameters (the API's OpenAPI subset,
// types in upper case) or by ParametersJSONSchema (JSON Schema, which
// openmax's tool schemas are, so the client sends this one).
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

// GenerationConfig holds the generation settings the client sends.
type GenerationConfig struct {
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *ThinkingConfig `json:"thinkingConfig,omitempty"`
}

// ThinkingConfig asks for thought summaries (thought parts) in the reply.
type ThinkingConfig struct {
	IncludeThoughts bool `json:"includeThoughts"`
}

// Response is a GenerateContentResponse: one chunk of a stream, or a
// whole non-streamed reply. An event of a stream may instead hold an
// error (Error set, nothing else).
type Response struct {
	Candidates     []Candidate     `json:"candidates,omitempty"`
	PromptFeedback *PromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion,omitempty"`
	ResponseID     string          `json:"responseId,omitempty"`
	Error          *Status         `json:"error,omitempty"`
}

// Candidate is one reply candidate; the client asks for one and reads
// index 0 only (an absent index is 0).
type Candidate struct {
	Content       *Content        `json:"content,omitempty"`
	FinishReason  string          `json:"finishReason,omitempty"`
	FinishMessage string          `json:"finishMessage,omitempty"`
	Index         *int            `json:"index,omitempty"`
	SafetyRatings json.RawMessage `json:"safetyRatings,omitempty"`
}

// PromptFeedback says the prompt was blocked (BlockReason set): the reply
// then has no candidates.
type PromptFeedback struct {
	BlockReason        string          `json:"blockReason,omitempty"`
	BlockReasonMessage string          `json:"blockReasonMessage,omitempty"`
	SafetyRatings      json.RawMessage `json:"safetyRatings,omitempty"`
}

// UsageMetadata is the token accounting of a reply. Every chunk of a
// stream repeats the running totals, and a chunk may lack a count. The
// prompt count includes the cached part; the candidates count leaves out
// the thoughts, which are counted apart.
type UsageMetadata struct {
	PromptTokenCount        *int            `json:"promptTokenCount,omitempty"`
	CandidatesTokenCount    *int            `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         *int            `json:"totalTokenCount,omitempty"`
	CachedContentTokenCount *int            `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      *int            `json:"thoughtsTokenCount,omitempty"`
	ToolUsePromptTokenCount *int            `json:"toolUsePromptTokenCount,omitempty"`
	PromptTokensDetails     json.RawMessage `json:"promptTokensDetails,omitempty"`
}

// Status is a google.rpc.Status, the error object of the wire: Code is
// the HTTP status, Status its canonical name (RESOURCE_EXHAUSTED,
// INVALID_ARGUMENT, ...), Details typed objects such as RetryInfo.
type Status struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status,omitempty"`
	Details []json.RawMessage `json:"details,omitempty"`
}

// ErrorBody is an error as the wire sends it, in a body or an event.
type ErrorBody struct {
	Error *Status `json:"error"`
}

// RetryInfoType is the @type of the detail that asks for a wait.
const RetryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// RetryInfo is a google.rpc.RetryInfo detail: RetryDelay is a
// google.protobuf.Duration in its JSON form, seconds with an "s" ("7s",
// "1.5s").
type RetryInfo struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
}

// Endpoints.
const (
	// DefaultBaseURL is the Gemini API root.
	DefaultBaseURL = "https://generativelanguage.googleapis.com"
	// APIVersion is the Gemini API version the client calls.
	APIVersion = "v1beta"
	// VertexAPIVersion is the Vertex AI version the client calls.
	VertexAPIVersion = "v1"
	// MethodStream and MethodWhole are the methods of the path.
	MethodStream = "streamGenerateContent"
	MethodWhole  = "generateContent"
	// StreamQuery is the query that makes streamGenerateContent answer in
	// Server-Sent Events (without it the stream is one JSON array).
	StreamQuery = "alt=sse"
)

// VertexBaseURL is the Vertex AI root of a location ("global" has no
// regional host).
func VertexBaseURL(location string) string {
	if location == "" || location == "global" {
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + location + "-aiplatform.googleapis.com"
}

// method is the path method for a streaming or a whole reply.
func method(stream bool) string {
	if stream {
		return MethodStream
	}
	return MethodWhole
}

// Path is the Gemini API request path below the API root for model, of a
// streamed (stream) or a whole reply; a streamed one also takes
// StreamQuery. A "models/" prefix on model is taken off.
func Path(model string, stream bool) string {
	return "/" + APIVersion + "/models/" + url.PathEscape(strings.TrimPrefix(model, "models/")) + ":" + method(stream)
}

// VertexPath is the Vertex AI request path below the root for a
// publisher model in project and location.
func VertexPath(project, location, model string, stream bool) string {
	return "/" + VertexAPIVersion + "/projects/" + url.PathEscape(project) + "/locations/" + url.PathEscape(location) +
		"/publishers/google/models/" + url.PathEscape(strings.TrimPrefix(model, "models/")) + ":" + method(stream)
}

// ParsePath reads a request path (a query is ignored) of either API under
// any root and version: the model it names, and whether it asks for a
// stream. ok is false for any other path.
func ParsePath(p string) (model string, stream, ok bool) {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		return "", false, false
	}
	rest := p[i+len("/models/"):]
	name, m, found := strings.Cut(rest, ":")
	if !found || name == "" || strings.Contains(name, "/") {
		return "", false, false
	}
	switch m {
	case MethodStream:
		stream = true
	case MethodWhole:
	default:
		return "", false, false
	}
	if u, err := url.PathUnescape(name); err == nil {
		name = u
	}
	return name, stream, true
}

// IsPath reports whether a request path is a generateContent or
// streamGenerateContent call of either API.
func IsPath(p string) bool {
	_, _, ok := ParsePath(p)
	return ok
}

// Credentials: where a request carries its secret. The recorder's
// scrubber and `cassette scan` must know them all: our client sends the
// API key in KeyHeader (never in the URL), Vertex a bearer token in
// Authorization, and other clients (older SDKs, curl examples) the key in
// the query as KeyQuery.
const (
	KeyHeader = "X-Goog-Api-Key"
	KeyQuery  = "key"
)

// SecretHeaders are the request headers that carry credentials on this
// wire; SecretQuery the query parameters.
var (
	SecretHeaders = []string{KeyHeader, "Authorization"}
	SecretQuery   = []string{KeyQuery}
)

// KeyEnv is the environment variable of the Gemini API key; AltKeyEnv
// the other name Google's SDKs read.
const (
	KeyEnv    = "GEMINI_API_KEY"
	AltKeyEnv = "GOOGLE_API_KEY"
)
