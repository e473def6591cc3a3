package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Dialect is how the "jsonrpc" member is spoken.
type Dialect uint8

const (
	// V2 writes "jsonrpc":"2.0" first in every message and requires it of
	// every message read.
	V2 Dialect = iota
	// Bare neither writes the member nor reads it (codex app-server's
	// JSON-RPC, which leaves it out).
	Bare
)

// Errors Decode returns, for errors.Is; a line that is not valid JSON, or
// whose members have the wrong types, is a *ParseError instead.
var (
	// ErrNotObject is a line that does not start with '{'.
	ErrNotObject = errors.New("jsonrpc: not a JSON object")
	// ErrBatch is a line that starts with '[': a batch, which no peer of
	// openmax sends and this codec does not take. It is an ErrNotObject.
	ErrBatch = fmt.Errorf("%w: a batch (JSON array), which is not supported", ErrNotObject)
	// ErrVersion is a V2 message without "jsonrpc":"2.0".
	ErrVersion = errors.New(`jsonrpc: no "jsonrpc":"2.0" member`)
	// ErrNotMessage is an object with neither a method nor an id.
	ErrNotMessage = errors.New("jsonrpc: neither a request, a notification nor a response")
)

// ParseError is a line that is not one JSON object, or one whose JSON-RPC
// members have the wrong types; Err says why (encoding/json's error, as
// it worded it).
type ParseError struct{ Err error }

func (e *ParseError) Error() string { return "jsonrpc: " + e.Err.Error() }
func (e *ParseError) Unwrap() error { return e.Err }

// message is every member of a JSON-RPC message, for decoding. An absent
// member stays nil; a null id or result is kept as the text null, a null
// method or error is as absent.
type message struct {
	Version json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

// Decode reads line as one message: a *Request (a method and an id), a
// *Notification (a method, no id) or a *Response (an id, no method). The
// line must start with '{' (white space may follow the object, not
// precede it; a caller that allows it trims first). Members match as
// encoding/json matches them, case-insensitively; members JSON-RPC does
// not define are ignored, "jsonrpc" too in the Bare dialect. Decode does
// not judge what the protocol on top decides: an id of any JSON value is
// kept as sent, so is a response with both result and error, or neither.
func (d Dialect) Decode(line []byte) (Message, error) {
	if len(line) == 0 || line[0] != '{' {
		if len(line) > 0 && line[0] == '[' {
			return nil, ErrBatch
		}
		return nil, ErrNotObject
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, &ParseError{Err: err}
	}
	if d == V2 {
		var v string
		if m.Version != nil {
			if err := json.Unmarshal(m.Version, &v); err != nil {
				return nil, &ParseError{Err: fmt.Errorf(`"jsonrpc" is %s, not a string`, m.Version)}
			}
		}
		if v != "2.0" {
			return nil, ErrVersion
		}
	}
	id := ID{raw: string(m.ID)}
	switch {
	case m.Method != nil && id.IsValid():
		return &Request{ID: id, Method: *m.Method, Params: m.Params}, nil
	case m.Method != nil:
		return &Notification{Method: *m.Method, Params: m.Params}, nil
	case id.IsValid():
		return &Response{ID: id, Result: m.Result, Error: m.Error}, nil
	}
	return nil, ErrNotMessage
}

// wire is a message as Encode writes it: members in this order, those
// not set left out.
type wire struct {
	Version string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Encode writes m as one line without its newline: compact JSON, the
// members in the order jsonrpc, id, method, params, result, error, strings
// escaped as encoding/json escapes them (newlines included, so the line
// is one line). It refuses what is not a message: a request without an id
// or a method, a notification without a method, a response with both a
// result and an error. A response with neither is a null result, and one
// without an id answers with a null id.
func (d Dialect) Encode(m Message) ([]byte, error) {
	var w wire
	if d == V2 {
		w.Version = "2.0"
	}
	switch m := m.(type) {
	case *Request:
		if !m.ID.IsValid() || m.Method == "" {
			return nil, fmt.Errorf("jsonrpc: a request needs an id and a method (id %q, method %q)", m.ID.raw, m.Method)
		}
		w.ID, w.Method, w.Params = m.ID.Raw(), m.Method, m.Params
	case *Notification:
		if m.Method == "" {
			return nil, errors.New("jsonrpc: a notification needs a method")
		}
		w.Method, w.Params = m.Method, m.Params
	case *Response:
		if m.Error != nil && m.Result != nil {
			return nil, fmt.Errorf("jsonrpc: the response to id %s has both a result and an error", m.ID.raw)
		}
		w.ID, w.Result, w.Error = m.ID.Raw(), m.Result, m.Error
		if w.ID == nil {
			w.ID = json.RawMessage("null")
		}
		if w.Error == nil && w.Result == nil {
			w.Result = json.RawMessage("null")
		}
	default:
		return nil, fmt.Errorf("jsonrpc: cannot encode %T", m)
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: encode: %w", err)
	}
	return b, nil
}
