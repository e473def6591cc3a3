package vcr_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openmax/openmax/recorder/vcr"
)

// fakeT is a vcr.TB that keeps what the package reports, so a test can
// check that a replay fails its test without failing this one.
type fakeT struct {
	name     string
	cleanups []func()
	errs     []string
}

type fatal struct{ msg string }

func (f *fakeT) Helper()                        {}
func (f *fakeT) Name() string                   { return f.name }
func (f *fakeT) Cleanup(fn func())              { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Errorf(format string, a ...any) { f.errs = append(f.errs, fmt.Sprintf(format, a...)) }
func (f *fakeT) Fatalf(format string, a ...any) { panic(fatal{fmt.Sprintf(format, a...)}) }
func (f *fakeT) finish() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}
func (f *fakeT) failures() string { return strings.Join(f.errs, "\n") }

// run runs body as a test named name and returns its fakeT after the
// cleanups ran, and the Fatalf message if it stopped.
func run(name string, body func(t vcr.TB)) (ft *fakeT, fatalMsg string) {
	ft = &fakeT{name: name}
	func() {
		defer func() {
			if r := recover(); r != nil {
				f, ok := r.(fatal)
				if !ok {
					panic(r)
				}
				fatalMsg = f.msg
			}
		}()
		body(ft)
	}()
	ft.finish()
	return ft, fatalMsg
}

const secret = "sk-live-0123456789abcdef"

// upstream is a model API that answers every POST with a reply naming the
// request body, and counts the requests it got.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"reply":"you sent %d bytes","auth_seen":%t}`, len(body), r.Header.Get("Authorization") != "")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// post sends one chat-like request through rt.
func post(t *testing.T, rt http.RoundTripper, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestRecordOnceThenReplay: the first run records (the key scrubbed), the
// next replays offline with the same answer and a clean verdict.
func TestRecordOnceThenReplay(t *testing.T) {
	noModeEnv(t)
	srv, calls := upstream(t)
	path := filepath.Join(t.TempDir(), "testdata", "chat.yaml")
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

	var recorded string
	ft, msg := run("TestChat", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path))
		_, recorded = post(t, rt, srv.URL, body)
	})
	if msg != "" || len(ft.errs) > 0 {
		t.Fatalf("recording: fatal %q, errors %s", msg, ft.failures())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) || calls.Load() != 1 {
		t.Fatalf("cassette after %d call(s) holds the key or nothing:\n%s", calls.Load(), data)
	}

	srv.Close() // the replay must not need it
	ft, msg = run("TestChat", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path))
		status, got := post(t, rt, srv.URL, body)
		if status != 200 || got != recorded {
			t.Errorf("replayed %d %q, recorded %q", status, got, recorded)
		}
	})
	if msg != "" || len(ft.errs) > 0 {
		t.Errorf("replay: fatal %q, errors %s", msg, ft.failures())
	}
}

// TestReplayFailsTheTest: a request the cassette does not hold is answered
// as the vendor's 400 and fails the test at cleanup, and so does a
// recorded interaction nobody asked for (unless AllowUnused).
func TestReplayFailsTheTest(t *testing.T) {
	noModeEnv(t)
	srv, _ := upstream(t)
	path := filepath.Join(t.TempDir(), "c.yaml")
	run("TestC", func(tb vcr.TB) {
		post(t, vcr.New(tb, vcr.WithCassette(path), vcr.WithMode(vcr.Record)), srv.URL, `{"model":"m","n":1}`)
	})
	ft, _ := run("TestC", func(tb vcr.TB) {
		status, got := post(t, vcr.New(tb, vcr.WithCassette(path), vcr.WithMode(vcr.ReplayOnly)), srv.URL, `{"model":"m","n":2}`)
		if status != 400 || !strings.Contains(got, "error") {
			t.Errorf("a miss answered %d %q, want a vendor-shaped 400", status, got)
		}
	})
	if f := ft.failures(); !strings.Contains(f, "request 0 is not in the cassette") || !strings.Contains(f, "never requested: [0]") {
		t.Errorf("the test was not failed for the miss and the unused interaction:\n%s", f)
	}
	ft, _ = run("TestC", func(tb vcr.TB) {
		vcr.New(tb, vcr.WithCassette(path), vcr.AllowUnused())
	})
	if len(ft.errs) > 0 {
		t.Errorf("AllowUnused still failed the test: %s", ft.failures())
	}
}

// TestModes: ReplayOnly without a cassette stops the test with a hint;
// OPENMAX_RECORD=1 records again over an existing cassette.
func TestModes(t *testing.T) {
	noModeEnv(t)
	srv, calls := upstream(t)
	path := filepath.Join(t.TempDir(), "m.yaml")
	_, msg := run("TestM", func(tb vcr.TB) { vcr.New(tb, vcr.WithCassette(path), vcr.WithMode(vcr.ReplayOnly)) })
	if !strings.Contains(msg, "no cassette") || !strings.Contains(msg, vcr.RecordEnv+"=1") {
		t.Errorf("ReplayOnly without a cassette: %q", msg)
	}
	run("TestM", func(tb vcr.TB) { post(t, vcr.New(tb, vcr.WithCassette(path)), srv.URL, `{"a":1}`) })
	run("TestM", func(tb vcr.TB) { post(t, vcr.New(tb, vcr.WithCassette(path)), srv.URL, `{"a":1}`) })
	if n := calls.Load(); n != 1 {
		t.Fatalf("record once: the upstream got %d requests, want 1", n)
	}
	t.Setenv(vcr.RecordEnv, "1")
	run("TestM", func(tb vcr.TB) { post(t, vcr.New(tb, vcr.WithCassette(path)), srv.URL, `{"a":1}`) })
	if n := calls.Load(); n != 2 {
		t.Errorf("with %s=1 the upstream got %d requests in all, want 2", vcr.RecordEnv, n)
	}
}

// TestServer: a cassette served over loopback HTTP to any client.
func TestServer(t *testing.T) {
	noModeEnv(t)
	srv, _ := upstream(t)
	path := filepath.Join(t.TempDir(), "s.yaml")
	var recorded string
	run("TestS", func(tb vcr.TB) {
		_, recorded = post(t, vcr.New(tb, vcr.WithCassette(path)), srv.URL, `{"q":1}`)
	})
	ft, msg := run("TestS", func(tb vcr.TB) {
		base := vcr.Server(tb, vcr.WithCassette(path))
		if status, got := post(t, http.DefaultTransport, base, `{"q":1}`); status != 200 || got != recorded {
			t.Errorf("served %d %q, recorded %q", status, got, recorded)
		}
	})
	if msg != "" || len(ft.errs) > 0 {
		t.Errorf("fatal %q, errors %s", msg, ft.failures())
	}
	ft, _ = run("TestS", func(tb vcr.TB) { vcr.Server(tb, vcr.WithCassette(path)) })
	if !strings.Contains(ft.failures(), "never requested") {
		t.Errorf("an unused interaction did not fail the test: %q", ft.failures())
	}
}

func TestDefaultPath(t *testing.T) {
	for name, want := range map[string]string{
		"TestChat":             filepath.Join("testdata", "TestChat.yaml"),
		"TestChat/429_then_ok": filepath.Join("testdata", "TestChat", "429_then_ok.yaml"),
		`TestChat/a:b*c?`:      filepath.Join("testdata", "TestChat", "a_b_c_.yaml"),
	} {
		if got := vcr.DefaultPath(name); got != want {
			t.Errorf("DefaultPath(%q) = %q, want %q", name, got, want)
		}
	}
}
