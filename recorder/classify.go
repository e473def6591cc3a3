package recorder

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/openmax/openmax/recorder/cassette"
)

// Classify names the kind of a transport failure, one of the cassette's
// Kind constants, checked in this order:
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
// A nil error has no kind ("").
func Classify(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.Canceled) {
		return cassette.KindCancel
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return cassette.KindDNS
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return cassette.KindRefused
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return cassette.KindRefused
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return cassette.KindReset
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return cassette.KindEOF
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return cassette.KindTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return cassette.KindTimeout
	}
	return cassette.KindOther
}
