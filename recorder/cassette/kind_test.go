package cassette

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestKindsListsEveryKind(t *testing.T) {
	want := []string{KindCancel, KindDNS, KindRefused, KindReset, KindEOF, KindTimeout, KindOther}
	if got := Kinds(); !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %q, want %q", got, want)
	}
}

func TestKindOf(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{context.Canceled, KindCancel},
		{fmt.Errorf("wrapped: %w", context.Canceled), KindCancel},
		{&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x"}}, KindDNS},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, KindRefused},
		{&net.OpError{Op: "dial", Err: errors.New("i/o timeout")}, KindRefused},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, KindReset},
		{&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}, KindReset},
		{io.ErrUnexpectedEOF, KindEOF},
		{fmt.Errorf("Post %q: %w", "http://h/", io.EOF), KindEOF},
		{context.DeadlineExceeded, KindTimeout},
		{&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, KindTimeout},
		{errors.New("boom"), KindOther},
	} {
		if got := KindOf(tt.err); got != tt.want {
			t.Errorf("KindOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestErrRoundTrip: every kind, replayed as an error before a response and
// in a body, against any host, is recognised as the same kind again.
func TestErrRoundTrip(t *testing.T) {
	for _, k := range Kinds() {
		for _, host := range []string{"", "127.0.0.1:8080", "api.example.com:443", "api.example.com"} {
			for _, inBody := range []bool{false, true} {
				for _, msg := range []string{"", "read tcp 127.0.0.1:1->127.0.0.1:2: recorded"} {
					e := &Error{Kind: k, Message: msg, At: time.Second}
					err := e.Err(host, inBody)
					if err == nil {
						t.Fatalf("%s (host %q, in body %v): nil error", k, host, inBody)
					}
					if got := KindOf(err); got != k {
						t.Errorf("%s (host %q, in body %v, message %q): replayed as %#v, which is of kind %q", k, host, inBody, msg, err, got)
					}
					if err.Error() == "" {
						t.Errorf("%s: an error without a message", k)
					}
				}
			}
		}
	}
}

// TestErrShapes: what vendor code asks of a replayed error holds for each
// kind (errors.Is and errors.As, Timeout, the message).
func TestErrShapes(t *testing.T) {
	is := func(target error) func(error) bool {
		return func(err error) bool { return errors.Is(err, target) }
	}
	dialOp := func(err error) bool {
		var op *net.OpError
		return errors.As(err, &op) && op.Op == "dial" && op.Addr != nil && op.Addr.String() == "api.example.com:443"
	}
	dnsName := func(err error) bool {
		var d *net.DNSError
		return errors.As(err, &d) && d.Name == "api.example.com" && d.IsNotFound
	}
	timeout := func(err error) bool {
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	not := func(f func(error) bool) func(error) bool { return func(err error) bool { return !f(err) } }
	message := func(want string) func(error) bool { return func(err error) bool { return err.Error() == want } }
	same := func(target error) func(error) bool { return func(err error) bool { return err == target } }
	for _, tt := range []struct {
		kind, msg string
		inBody    bool
		checks    map[string]func(error) bool
	}{
		{KindRefused, "m", false, map[string]func(error) bool{"ECONNREFUSED": is(syscall.ECONNREFUSED), "a dial OpError": dialOp}},
		{KindDNS, "m", false, map[string]func(error) bool{"a DNSError naming the host": dnsName, "not refused": not(is(syscall.ECONNREFUSED))}},
		{KindReset, "m", true, map[string]func(error) bool{"ECONNRESET": is(syscall.ECONNRESET), "not a timeout": not(timeout)}},
		{KindReset, "m", false, map[string]func(error) bool{"ECONNRESET": is(syscall.ECONNRESET), "not a dial": not(dialOp)}},
		{KindEOF, "m", true, map[string]func(error) bool{"io.ErrUnexpectedEOF itself": same(io.ErrUnexpectedEOF)}},
		{KindEOF, "unexpected end", false, map[string]func(error) bool{"io.ErrUnexpectedEOF": is(io.ErrUnexpectedEOF), "the recorded message": message("unexpected end")}},
		{KindEOF, "", false, map[string]func(error) bool{"io.ErrUnexpectedEOF": is(io.ErrUnexpectedEOF), "its message": message("unexpected EOF")}},
		{KindTimeout, "", true, map[string]func(error) bool{"a timeout": timeout, "i/o timeout": message("i/o timeout"), "not canceled": not(is(context.Canceled))}},
		{KindTimeout, "context deadline exceeded (Client.Timeout)", false, map[string]func(error) bool{"a timeout": timeout, "the recorded message": message("context deadline exceeded (Client.Timeout)")}},
		{KindCancel, "m", true, map[string]func(error) bool{"context.Canceled itself": same(context.Canceled)}},
		{KindCancel, "closed by the client", false, map[string]func(error) bool{"context.Canceled": is(context.Canceled), "the recorded message": message("closed by the client")}},
		{KindOther, "boom", true, map[string]func(error) bool{"the recorded message": message("boom"), "not EOF": not(is(io.ErrUnexpectedEOF)), "not a timeout": not(timeout)}},
		{KindOther, "", false, map[string]func(error) bool{"a message naming the kind": message("replay: recorded transport failure (other)")}},
		{"", "", false, map[string]func(error) bool{"a generic message": message("replay: recorded transport failure")}},
		{"brand-new", "", false, map[string]func(error) bool{"a message naming the unknown kind": message("replay: recorded transport failure (brand-new)"), "of kind other": func(err error) bool { return KindOf(err) == KindOther }}},
	} {
		err := (&Error{Kind: tt.kind, Message: tt.msg}).Err("api.example.com:443", tt.inBody)
		for name, check := range tt.checks {
			if !check(err) {
				t.Errorf("%s (in body %v): %#v (%v) is not %s", tt.kind, tt.inBody, err, err, name)
			}
		}
	}
}

// TestErrorOfRoundTrip: a live error, recorded and replayed, is of its
// kind again.
func TestErrorOfRoundTrip(t *testing.T) {
	if ErrorOf(nil, time.Second) != nil {
		t.Error("ErrorOf(nil) is not nil")
	}
	for _, live := range []error{
		context.Canceled,
		&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x"}},
		&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)},
		&net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded},
		&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
		&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)},
		io.ErrUnexpectedEOF,
		io.EOF,
		context.DeadlineExceeded,
		&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded},
		errors.New("boom"),
	} {
		e := ErrorOf(live, 3*time.Second)
		if e.Message != live.Error() || e.At != 3*time.Second {
			t.Errorf("ErrorOf(%v) = %+v", live, e)
		}
		for _, inBody := range []bool{false, true} {
			if got := KindOf(e.Err("h:1", inBody)); got != KindOf(live) {
				t.Errorf("%v: recorded as %q, replayed as kind %q (in body %v)", live, e.Kind, got, inBody)
			}
		}
	}
}
