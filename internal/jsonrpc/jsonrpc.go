// Package jsonrpc is the one JSON-RPC 2.0 codec of openmax: the messages
// (Request, Notification, Response, Error) with their ids, their encoding
// as one line each and their decoding from one, and the framing of a
// stream into bounded lines (Reader). It speaks two dialects of the same
// protocol: V2 writes and requires the "jsonrpc":"2.0" member (the hook
// processes of openmax.hooks/1), Bare neither writes nor reads it (codex
// app-server, and the fake app-server replaying it). It does no I/O of its
// own beyond Reader, keeps no state between messages and correlates
// nothing: pairing a response with its request is the caller's job, by
// the ID this package hands back exactly as it was sent. It is a leaf: it
// imports the standard library and internal/lines (the bounded line
// reader every line protocol of openmax shares), nothing else.
//
// Concurrency: Encode, Decode and the constructors are safe for
// concurrent use, and a message or an ID, once built, is a value that may
// be shared and read from any goroutine (nothing in this package changes
// one). A Reader belongs to one goroutine at a time, like the stream it
// reads.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// ID is a request's id as it was sent: the text of a JSON number or
// string (or, from a lax peer, any other JSON value), never converted, so
// 1, 1.0 and "1" are three ids and a response carries back the text its
// request came with (Encode escapes <, > and & inside a string id as
// encoding/json escapes every string, which spells the same string). The
// zero ID is no id (a notification's).
type ID struct{ raw string }

// Int64ID is the number id n.
func Int64ID(n int64) ID { return ID{strconv.FormatInt(n, 10)} }

// StringID is the string id s, encoded without HTML escaping.
func StringID(s string) ID { return ID{string(quote(s))} }

// IDKind is what kind of JSON value an id is.
type IDKind uint8

// The kinds of id. JSON-RPC allows numbers, strings and null; an id of
// another kind is kept as sent, so a lax peer can still be answered.
const (
	IDNone IDKind = iota
	IDNumber
	IDString
	IDNull
	IDOther
)

// Kind is the kind of JSON value the id is.
func (id ID) Kind() IDKind {
	if id.raw == "" {
		return IDNone
	}
	switch c := id.raw[0]; {
	case c == '"':
		return IDString
	case c == '-' || c >= '0' && c <= '9':
		return IDNumber
	case id.raw == "null":
		return IDNull
	}
	return IDOther
}

// IsValid reports whether there is an id at all (a request's or a
// response's, even a null one).
func (id ID) IsValid() bool { return id.raw != "" }

// Int64 is a number id written as a decimal integer that fits in an
// int64 (1, not 1.0 nor "1"); false for any other id.
func (id ID) Int64() (int64, bool) {
	n, err := strconv.ParseInt(id.raw, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// Text is the value of a string id; false for any other id.
func (id ID) Text() (string, bool) {
	if id.Kind() != IDString {
		return "", false
	}
	var s string
	if err := json.Unmarshal([]byte(id.raw), &s); err != nil {
		return "", false
	}
	return s, true
}

// String is the id's JSON text as sent; "" for no id.
func (id ID) String() string { return id.raw }

// Raw is the id's JSON text as sent; nil for no id.
func (id ID) Raw() json.RawMessage {
	if id.raw == "" {
		return nil
	}
	return json.RawMessage(id.raw)
}

// MarshalJSON writes the id as sent; no id is written as null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON keeps the JSON value b as the id, white space trimmed.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return fmt.Errorf("jsonrpc: id %q is not a JSON value", b)
	}
	id.raw = string(b)
	return nil
}

// Error is a JSON-RPC error object: what a failed request is answered
// with.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// The error codes JSON-RPC 2.0 defines.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Message is a *Request, a *Notification or a *Response.
type Message interface{ isMessage() }

// Request is a call: it has an id, and is answered by a Response with
// the same id.
type Request struct {
	ID     ID
	Method string
	Params json.RawMessage // as sent; nil when absent
}

// Notification is a message with a method and no id: nothing answers it.
type Notification struct {
	Method string
	Params json.RawMessage // as sent; nil when absent
}

// Response answers the request with its ID: with Result, or with Error.
// A response read from a peer that sent both keeps both, and Err says it
// failed; Encode writes only one.
type Response struct {
	ID     ID
	Result json.RawMessage // as sent ("null" for a null result); nil when absent
	Error  *Error          // nil when absent or null
}

func (*Request) isMessage()      {}
func (*Notification) isMessage() {}
func (*Response) isMessage()     {}

// Err is the response's error, nil for a success.
func (r *Response) Err() error {
	if r.Error == nil {
		return nil
	}
	return r.Error
}

// NewRequest is the request id of method, with params encoded by
// encoding/json (nil params are left out).
func NewRequest(id ID, method string, params any) (*Request, error) {
	p, err := marshalValue("params", params)
	if err != nil {
		return nil, err
	}
	return &Request{ID: id, Method: method, Params: p}, nil
}

// NewNotification is the notification of method, with params encoded as
// NewRequest encodes them.
func NewNotification(method string, params any) (*Notification, error) {
	p, err := marshalValue("params", params)
	if err != nil {
		return nil, err
	}
	return &Notification{Method: method, Params: p}, nil
}

// NewResponse is the answer to id: rpcErr when it is not nil, otherwise
// result encoded by encoding/json (nil is a null result).
func NewResponse(id ID, result any, rpcErr *Error) (*Response, error) {
	if rpcErr != nil {
		return &Response{ID: id, Error: rpcErr}, nil
	}
	r, err := marshalValue("result", result)
	if err != nil {
		return nil, err
	}
	return &Response{ID: id, Result: r}, nil
}

func marshalValue(what string, v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: encode %s: %w", what, err)
	}
	return b, nil
}

// quote is s as a JSON string without HTML escaping.
func quote(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
