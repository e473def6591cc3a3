package replay

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/openmax/openmax/recorder/cassette"
)

// errClosed is a read of a body after Close, worded as net/http words it.
var errClosed = errors.New("http: read on closed response body")

// transportError is the Go error a recorded transport failure replays as,
// shaped so that vendor code classifies it the way it classified the
// original: refused is a dial *net.OpError and dns a *net.DNSError (both
// "unreachable" to httpx), reset a read *net.OpError wrapping ECONNRESET,
// timeout a net.Error whose Timeout() is true. inBody is a failure after
// the response headers, where eof is io.ErrUnexpectedEOF and cancel
// context.Canceled as net/http reports them; before any response they keep
// the recorded message and wrap those. Anything else is the recorded
// message.
func transportError(e *cassette.Error, host string, inBody bool) error {
	switch e.Kind {
	case cassette.KindRefused:
		return &net.OpError{Op: "dial", Net: "tcp", Addr: addr(host), Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	case cassette.KindDNS:
		name := host
		if h, _, err := net.SplitHostPort(host); err == nil {
			name = h
		}
		return &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	case cassette.KindReset:
		return &net.OpError{Op: "read", Net: "tcp", Addr: addr(host), Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	case cassette.KindTimeout:
		msg := e.Message
		if msg == "" {
			msg = "i/o timeout"
		}
		return &timeoutError{msg: msg}
	case cassette.KindEOF:
		if inBody {
			return io.ErrUnexpectedEOF
		}
		return &recordedError{msg: e.Message, kind: e.Kind, cause: io.ErrUnexpectedEOF}
	case cassette.KindCancel:
		if inBody {
			return context.Canceled
		}
		return &recordedError{msg: e.Message, kind: e.Kind, cause: context.Canceled}
	}
	return &recordedError{msg: e.Message, kind: e.Kind}
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
