package cassette

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Error kinds.
const (
	KindRefused = "refused" // the connection was refused: the request never reached the endpoint
	KindDNS     = "dns"     // the host name did not resolve
	KindReset   = "reset"   // the connection was reset
	KindEOF     = "eof"     // the body ended early (unexpected EOF)
	KindTimeout = "timeout" // a deadline or timeout fired
	KindCancel  = "cancel"  // the client cancelled the request
	KindOther   = "other"
)

// kind is one row of the kind table: how a live error is recognised as
// the kind (is) and the Go error a recorded one replays as (err), which is
// recognised as the same kind again.
type kind struct {
	name string
	// is reports whether a live error is of this kind; rows are tried in
	// table order, the first that matches wins. Nil for KindOther, the
	// fallback.
	is func(err error) bool
	// err is the error a recorded failure of this kind replays as: host
	// is the request's host (with port), inBody whether the failure came
	// after the response headers.
	err func(e *Error, host string, inBody bool) error
	// ending is how a server reproducing the failure ends the connection.
	ending Ending
}

// kinds is the kind table, in the order KindOf tries it.
var kinds = []kind{
	{
		// The client gave up.
		name: KindCancel,
		is:   func(err error) bool { return errors.Is(err, context.Canceled) },
		// In a body, as net/http reports it; before any response, with the
		// recorded message.
		err: func(e *Error, _ string, inBody bool) error {
			if inBody {
				return context.Canceled
			}
			return &recordedError{msg: e.Message, kind: e.Kind, cause: context.Canceled}
		},
		ending: EndSilent,
	},
	{
		// Go wraps a *net.DNSError in a dial error.
		name: KindDNS,
		is: func(err error) bool {
			var dns *net.DNSError
			return errors.As(err, &dns)
		},
		err: func(_ *Error, host string, _ bool) error {
			name := host
			if h, _, err := net.SplitHostPort(host); err == nil {
				name = h
			}
			return &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
		},
		ending: EndReset,
	},
	{
		// ECONNREFUSED, or any other failure to dial (a dial timeout too:
		// like a refusal, the request never reached the endpoint).
		name: KindRefused,
		is: func(err error) bool {
			if errors.Is(err, syscall.ECONNREFUSED) {
				return true
			}
			var op *net.OpError
			return errors.As(err, &op) && op.Op == "dial"
		},
		err: func(_ *Error, host string, _ bool) error {
			return &net.OpError{Op: "dial", Net: "tcp", Addr: addr(host), Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
		},
		ending: EndReset,
	},
	{
		name: KindReset,
		is: func(err error) bool {
			return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
		},
		err: func(_ *Error, host string, _ bool) error {
			return &net.OpError{Op: "read", Net: "tcp", Addr: addr(host), Err: os.NewSyscallError("read", syscall.ECONNRESET)}
		},
		ending: EndReset,
	},
	{
		// io.EOF as an error: the server closed the connection before it
		// answered.
		name: KindEOF,
		is: func(err error) bool {
			return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
		},
		err: func(e *Error, _ string, inBody bool) error {
			if inBody {
				return io.ErrUnexpectedEOF
			}
			return &recordedError{msg: e.Message, kind: e.Kind, cause: io.ErrUnexpectedEOF}
		},
		ending: EndClose,
	},
	{
		name: KindTimeout,
		is: func(err error) bool {
			if errors.Is(err, context.DeadlineExceeded) {
				return true
			}
			var ne net.Error
			return errors.As(err, &ne) && ne.Timeout()
		},
		err: func(e *Error, _ string, _ bool) error {
			msg := e.Message
			if msg == "" {
				msg = "i/o timeout"
			}
			return &timeoutError{msg: msg}
		},
		ending: EndSilent,
	},
	{
		name: KindOther,
		err: func(e *Error, _ string, _ bool) error {
			return &recordedError{msg: e.Message, kind: e.Kind}
		},
		ending: EndClose,
	},
}

// Ending is how a server that reproduces a recorded failure over real
// HTTP ends the connection, so that the client sees what it saw.
type Ending int

// Endings.
const (
	// EndClose closes the connection, before a response or in the middle
	// of the body (the client reads io.ErrUnexpectedEOF): eof and other.
	EndClose Ending = iota
	// EndReset resets the connection: reset, and refused and dns, which a
	// server that was reached can only show as a reset.
	EndReset
	// EndSilent holds the connection without a word until the client
	// gives up, as the recorded client did: timeout and cancel.
	EndSilent
)

// Ending is how a server reproducing the failure ends the connection; a
// kind this version does not know ends as other does.
func (e *Error) Ending() Ending { return e.row().ending }

// row is e's row of the kind table; KindOther's for a kind it does not
// hold.
func (e *Error) row() *kind {
	for i := range kinds {
		if kinds[i].name == e.Kind {
			return &kinds[i]
		}
	}
	return &kinds[len(kinds)-1]
}

// Kinds lists every error kind, in the order KindOf tries them (KindOther,
// the fallback, last).
func Kinds() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return names
}

// KindOf names the kind of a transport failure, one of the Kind
// constants, checked in this order:
//
//   - cancel: context.Canceled (the client gave up);
//   - dns: a *net.DNSError (which Go wraps in a dial error);
//   - refused: ECONNREFUSED, or any other failure to dial (a dial timeout
//     too: like a refusal, the request never reached the endpoint);
//   - reset: ECONNRESET or EPIPE;
//   - eof: io.ErrUnexpectedEOF, or io.EOF as an error (the server closed
//     the connection before it answered);
//   - timeout: context.DeadlineExceeded or a net.Error whose Timeout() is
//     true;
//   - other.
//
// A nil error has no kind (""). KindOf(e.Err(host, inBody)) is e.Kind
// for every kind.
func KindOf(err error) string {
	if err == nil {
		return ""
	}
	for _, k := range kinds {
		if k.is != nil && k.is(err) {
			return k.name
		}
	}
	return KindOther
}

// ErrorOf is the recorded form of a live transport failure that happened
// at offset at: its kind (KindOf) and message. A nil error has none.
func ErrorOf(err error, at time.Duration) *Error {
	if err == nil {
		return nil
	}
	return &Error{Kind: KindOf(err), Message: err.Error(), At: at}
}

// Err is the Go error the recorded failure replays as, shaped so that
// code classifies it the way it classified the original (KindOf gives
// e.Kind back): refused is a dial *net.OpError and dns a *net.DNSError,
// reset a read *net.OpError wrapping ECONNRESET, timeout a net.Error whose
// Timeout() is true. host is the request's host (with port), named in
// the error. inBody is a failure after the response headers, where eof is
// io.ErrUnexpectedEOF and cancel context.Canceled as net/http reports
// them; before any response they keep the recorded message and wrap
// those. Anything else, a kind this version does not know included, is
// the recorded message (of kind other).
func (e *Error) Err(host string, inBody bool) error {
	return e.row().err(e, host, inBody)
}

// addr is a peer address for error messages; nil when unknown, so the
// message does not end in a dangling space.
func addr(host string) net.Addr {
	if host == "" {
		return nil
	}
	return hostAddr(host)
}

type hostAddr string

func (hostAddr) Network() string  { return "tcp" }
func (a hostAddr) String() string { return string(a) }

// timeoutError is a recorded timeout: a net.Error that timed out.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string   { return e.msg }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

var _ net.Error = (*timeoutError)(nil)

// recordedError is a recorded failure replayed by its message.
type recordedError struct {
	msg   string
	kind  string
	cause error
}

func (e *recordedError) Error() string {
	switch {
	case e.msg != "":
		return e.msg
	case e.cause != nil:
		return e.cause.Error()
	case e.kind != "":
		return "replay: recorded transport failure (" + e.kind + ")"
	}
	return "replay: recorded transport failure"
}

func (e *recordedError) Unwrap() error { return e.cause }
