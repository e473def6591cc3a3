package report_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openmax/openmax/internal/citest"
)

// browser is headless Chromium driven over the DevTools protocol on
// --remote-debugging-pipe: JSON messages, each ended by a NUL byte, on
// the child's fds 3 (its input) and 4 (its output). One page, navigated
// from file to file; what the page logs and asks of the network is kept.
type browser struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	session string

	mu       sync.Mutex
	next     int
	pending  map[int]chan cdpMessage
	loaded   chan struct{}
	errs     []string // console errors, exceptions, error log entries
	requests []string // every URL the page asked for
	closed   chan struct{}
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *cdpError       `json:"error,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// chromium finds the browser, or skips the test saying why (fails it
// under CI=true, where .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium on PATH (chromium, chromium-browser, google-chrome or headless_shell): apt-get install chromium"
	citest.SkipOutsideCI(t, msg)
	return ""
}

// startBrowser starts headless Chromium with one blank page attached.
func startBrowser(t *testing.T, ctx context.Context) *browser {
	t.Helper()
	path := chromium(t)
	toChild, childIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	childOut, fromChild, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--headless", "--remote-debugging-pipe", "--user-data-dir=" + t.TempDir(),
		"--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--mute-audio", "--allow-file-access-from-files"}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox") // Chromium refuses to sandbox as root
	}
	cmd := exec.Command(path, append(args, "about:blank")...)
	cmd.ExtraFiles = []*os.File{toChild, fromChild} // fds 3 and 4
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	toChild.Close()
	fromChild.Close()
	b := &browser{cmd: cmd, in: childIn, pending: map[int]chan cdpMessage{}, loaded: make(chan struct{}, 1), closed: make(chan struct{})}
	go b.read(childOut)
	t.Cleanup(func() {
		b.in.Close() // Chromium exits when its pipe closes
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call(t, ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	b.call(t, ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable", "Network.enable"} {
		b.call(t, ctx, b.session, m, nil, nil)
	}
	b.call(t, ctx, b.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

// read dispatches the child's messages until its output closes.
func (b *browser) read(r io.Reader) {
	defer close(b.closed)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch := b.pending[m.ID]; ch != nil {
				ch <- m
				delete(b.pending, m.ID)
			}
			b.mu.Unlock()
			continue
		}
		b.event(m)
		b.mu.Unlock()
	}
}

// event keeps what a page event says; b.mu is held.
func (b *browser) event(m cdpMessage) {
	switch m.Method {
	case "Page.loadEventFired":
		select {
		case b.loaded <- struct{}{}:
		default:
		}
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Type == "error" || p.Type == "assert" || p.Type == "warning" {
			b.errs = append(b.errs, fmt.Sprintf("console.%s %v", p.Type, p.Args))
		}
	case "Runtime.exceptionThrown":
		b.errs = append(b.errs, "exception: "+string(m.Params))
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level, Text, URL string
			} `json:"entry"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" || p.Entry.Level == "warning" {
			b.errs = append(b.errs, fmt.Sprintf("log %s: %s %s", p.Entry.Level, p.Entry.Text, p.Entry.URL))
		}
	case "Network.requestWillBeSent":
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		json.Unmarshal(m.Params, &p)
		b.requests = append(b.requests, p.Request.URL)
	}
}

// call sends one command and decodes its result into out (when not nil).
func (b *browser) call(t *testing.T, ctx context.Context, session, method string, params any, out any) {
	t.Helper()
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(data, 0)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			t.Fatalf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
		}
	case <-b.closed:
		t.Fatalf("%s: chromium went away", method)
	case <-ctx.Done():
		t.Fatalf("%s: %v", method, ctx.Err())
	}
}

// open navigates the page to url and waits for its load event.
func (b *browser) open(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	select { // a load left over from the page before
	case <-b.loaded:
	default:
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	b.call(t, ctx, b.session, "Page.navigate", map[string]any{"url": url}, &nav)
	if nav.ErrorText != "" {
		t.Fatalf("open %s: %s", url, nav.ErrorText)
	}
	select {
	case <-b.loaded:
	case <-b.closed:
		t.Fatalf("open %s: chromium went away", url)
	case <-ctx.Done():
		t.Fatalf("open %s: %v", url, ctx.Err())
	}
}

// eval runs a script in the page and decodes its JSON value into out.
func (b *browser) eval(t *testing.T, ctx context.Context, expr string, out any) {
	t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	b.call(t, ctx, b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if len(res.ExceptionDetails) > 0 {
		t.Fatalf("eval %s: %s", expr, res.ExceptionDetails)
	}
	if err := json.Unmarshal(res.Result.Value, out); err != nil {
		t.Fatalf("eval %s: %v (%s)", expr, err, res.Result.Value)
	}
}

// screenshot is the whole page as a PNG.
func (b *browser) screenshot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	b.call(t, ctx, b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": false}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	return png
}

// problems are the console errors and the requests that left the file
// system since the last call.
func (b *browser) problems() (errs, away []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.requests {
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") && u != "about:blank" {
			away = append(away, u)
		}
	}
	errs = b.errs
	b.errs, b.requests = nil, nil
	return errs, away
}
