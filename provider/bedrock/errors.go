package bedrock

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/openmax/openmax/provider"
	"github.com/openmax/openmax/provider/bedrock/eventstream"
)

// How Bedrock's failures map onto the provider's failure types, and so
// what provider/retry does with them. The retry policy decides an HTTP
// error by its status (429 and 500/502/503/504 are resent, a quota code
// never) and an in-stream error by its type, before any text only; AWS's
// SDKs retry throttling and 5xx errors and nothing a request got wrong,
// and these rules come out the same:
//
//	HTTP error (x-amzn-ErrorType)       status  provider.HTTPError  retried
//	ThrottlingException                 429     Code as named       yes
//	ModelNotReadyException              429                         yes (the SDK retries it too)
//	ServiceUnavailableException         503                         yes
//	InternalServerException             500                         yes
//	ModelTimeoutException               408                         no (nor does the SDK)
//	ModelErrorException                 424                         no
//	ValidationException                 400                         no
//	ServiceQuotaExceededException       400                         no
//	AccessDeniedException               403                         no
//	UnrecognizedClientException         403                         no (a bad key or signature)
//	ResourceNotFoundException           404                         no
//
//	exception frame (:exception-type)   provider.StreamError{Type}  retried before any text
//	throttlingException                 as named                    yes
//	serviceUnavailableException                                     yes
//	internalServerException                                         yes
//	modelTimeoutException                                           yes (openmax's policy retries a
//	                                                                timeout it hears of in-stream;
//	                                                                the SDK cannot retry a stream)
//	modelStreamErrorException                                       no (the model failed mid-reply)
//	validationException                                             no
//
// An error message (:message-type error) is a StreamError of its
// :error-code and :error-message. The code of an HTTP error is read from
// the x-amzn-ErrorType header (the part before any ':'), else from the
// body's __type (after any '#') or code; its message from the body's
// message (or Message); a body that is not JSON is the message, cut.

// ReadHTTPError reads a Bedrock error response into he, as an
// httpx.ErrorReader.
func ReadHTTPError(he *provider.HTTPError, h http.Header, body []byte) {
	var b struct {
		Message  *string `json:"message"`
		MessageU *string `json:"Message"`
		Type     string  `json:"__type"`
		Code     string  `json:"code"`
	}
	isJSON := json.Unmarshal(body, &b) == nil
	he.Code = errorCode(h.Get("X-Amzn-Errortype"))
	if he.Code == "" && isJSON {
		he.Code = errorCode(b.Type)
		if he.Code == "" {
			he.Code = b.Code
		}
	}
	switch {
	case isJSON && b.Message != nil:
		he.Message = *b.Message
	case isJSON && b.MessageU != nil:
		he.Message = *b.MessageU
	default:
		he.Message = cut(string(body))
	}
}

// errorCode is an AWS error type without its namespace (before '#') and
// its URI (after ':').
func errorCode(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	s, _, _ = strings.Cut(s, ":")
	return s
}

// cut is a body as an error message: trimmed, cut to a readable length.
func cut(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// exceptionError is the failure an exception or error message reports,
// nil for an event.
func exceptionError(m eventstream.Message) *provider.StreamError {
	switch m.String(":message-type") {
	case "exception":
		var b struct {
			Message         string `json:"message"`
			MessageU        string `json:"Message"`
			OriginalMessage string `json:"originalMessage"`
		}
		_ = json.Unmarshal(m.Payload, &b) // an exception says what it is even with a body we cannot read
		msg := b.Message
		if msg == "" {
			msg = b.MessageU
		}
		if msg == "" {
			msg = b.OriginalMessage
		}
		if msg == "" && !json.Valid(m.Payload) {
			msg = cut(string(m.Payload))
		}
		return &provider.StreamError{Type: m.String(":exception-type"), Message: msg}
	case "error":
		return &provider.StreamError{Type: m.String(":error-code"), Message: m.String(":error-message")}
	}
	return nil
}

// jsonError is the failure of a 2xx reply that came back as one JSON
// error document: Bedrock's {"message":...}, its type from the headers or
// the body.
func jsonError(h http.Header, data []byte) *provider.StreamError {
	he := &provider.HTTPError{}
	ReadHTTPError(he, h, data)
	return &provider.StreamError{Type: he.Code, Message: he.Message}
}

// ErrorType is the error type Bedrock gives an HTTP status.
func ErrorType(status int) string {
	switch status {
	case 400:
		return "ValidationException"
	case 401, 403:
		return "AccessDeniedException"
	case 404:
		return "ResourceNotFoundException"
	case 408:
		return "ModelTimeoutException"
	case 424:
		return "ModelErrorException"
	case 429:
		return "ThrottlingException"
	case 503, 529:
		return "ServiceUnavailableException"
	}
	if status >= 500 {
		return "InternalServerException"
	}
	return "ValidationException"
}

// ExceptionType is the in-stream exception Bedrock sends for the failure
// an HTTP status stands for (the fake provider's failure in a stream).
func ExceptionType(status int) string {
	switch status {
	case 408:
		return "modelTimeoutException"
	case 424:
		return "modelStreamErrorException"
	case 429:
		return "throttlingException"
	case 503, 529:
		return "serviceUnavailableException"
	}
	if status >= 500 {
		return "internalServerException"
	}
	return "validationException"
}

// StatusMessage is the message Bedrock sends with an error status, where
// it has one of its own; empty otherwise.
func StatusMessage(status int) string {
	switch status {
	case 429:
		return "Too many requests, please wait before trying again."
	case 503:
		return "Bedrock is unable to process your request."
	}
	return ""
}

// DefaultStreamFailure is the exception a server of the fake provider
// fails a stream with when a scenario names none: Bedrock's transient
// overload, which the retry policy resends before any text.
const DefaultStreamFailure = "serviceUnavailableException"

// StreamFailure is the exception Bedrock sends for code (an exception
// type; "" is DefaultStreamFailure) with the message Bedrock sends with it;
// ok is false, and the message empty, for a type it has no message of its
// own for.
func StreamFailure(code string) (se *provider.StreamError, ok bool) {
	if code == "" {
		code = DefaultStreamFailure
	}
	msg := ""
	switch code {
	case "throttlingException":
		msg = StatusMessage(429)
	case "serviceUnavailableException":
		msg = StatusMessage(503)
	}
	return &provider.StreamError{Type: code, Message: msg}, msg != ""
}
