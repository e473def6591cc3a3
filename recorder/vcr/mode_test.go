package vcr_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	stock "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/mode"
	"github.com/openmax/openmax/recorder/vcr"
)

// noModeEnv clears every variable that picks a mode, so a test sees only
// what it sets.
func noModeEnv(t *testing.T) {
	t.Setenv(mode.CIEnv, "")
	t.Setenv(vcr.ModeEnv, "")
	t.Setenv(vcr.RecordEnv, "")
}

// itemTexts is the text of each interaction as path holds it.
func itemTexts(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cassette.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	items, err := cassette.Items(data, f)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = it.Text
		if !bytes.Contains(data, it.Text) {
			t.Fatalf("%s: interaction %d's text is not the file's own", path, i)
		}
	}
	return out
}

// TestModeMissingAppends: mode missing serves what the cassette holds
// without the upstream, sends what it lacks upstream and appends it, the
// interactions it had staying byte for byte; the result loads in stock
// go-vcr, and a run after replays all of it offline.
func TestModeMissingAppends(t *testing.T) {
	noModeEnv(t)
	srv, calls := upstream(t)
	path := filepath.Join(t.TempDir(), "m.yaml")
	run("TestM", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path))
		post(t, rt, srv.URL, `{"n":1}`)
		post(t, rt, srv.URL, `{"n":2}`)
	})
	before := itemTexts(t, path)
	if len(before) != 2 || calls.Load() != 2 {
		t.Fatalf("recorded %d interactions with %d calls, want 2 and 2", len(before), calls.Load())
	}

	ft, msg := run("TestM", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path), vcr.WithMode(vcr.RecordMissing))
		post(t, rt, srv.URL, `{"n":1}`)
		post(t, rt, srv.URL, `{"n":3}`) // new
	})
	if msg != "" || len(ft.errs) > 0 {
		t.Fatalf("missing: fatal %q, errors %s", msg, ft.failures())
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the upstream got %d requests in all, want 3 (only the new one sent)", n)
	}
	after := itemTexts(t, path)
	if len(after) != 3 {
		t.Fatalf("after missing: %d interactions, want 3 (2 kept, 1 appended)", len(after))
	}
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Errorf("interaction %d changed:\n%s\n---\n%s", i, before[i], after[i])
		}
	}
	if !strings.Contains(string(after[2]), `{\"n\":3}`) && !strings.Contains(string(after[2]), `{"n":3}`) {
		t.Errorf("the appended interaction is not the new request:\n%s", after[2])
	}
	if _, err := stock.Load(strings.TrimSuffix(path, ".yaml")); err != nil {
		t.Errorf("stock go-vcr: %v", err)
	}

	srv.Close()
	ft, msg = run("TestM", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path), vcr.WithMode(vcr.ReplayOnly), vcr.AllowUnused())
		for _, b := range []string{`{"n":1}`, `{"n":3}`} {
			if status, _ := post(t, rt, srv.URL, b); status != 200 {
				t.Errorf("replaying %s: status %d", b, status)
			}
		}
	})
	if msg != "" || len(ft.errs) > 0 {
		t.Errorf("replay after missing: fatal %q, errors %s", msg, ft.failures())
	}
}

// TestModeMissingLeavesAFullCassetteAlone: with nothing missing, mode
// missing writes nothing (the file keeps its bytes and its time).
func TestModeMissingLeavesAFullCassetteAlone(t *testing.T) {
	noModeEnv(t)
	srv, calls := upstream(t)
	path := filepath.Join(t.TempDir(), "m.yaml")
	run("TestM", func(tb vcr.TB) { post(t, vcr.New(tb, vcr.WithCassette(path)), srv.URL, `{"n":1}`) })
	orig, _ := os.ReadFile(path)
	old := time.Unix(1_000_000, 0)
	os.Chtimes(path, old, old)
	run("TestM", func(tb vcr.TB) {
		post(t, vcr.New(tb, vcr.WithCassette(path), vcr.WithMode(vcr.RecordMissing)), srv.URL, `{"n":1}`)
	})
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if !bytes.Equal(got, orig) || !fi.ModTime().Equal(old) || calls.Load() != 1 {
		t.Errorf("the cassette was written (%d calls, mtime %v)", calls.Load(), fi.ModTime())
	}
}

// TestModeResolution: the default is once, replay under CI=true (a
// missing cassette then fails the test, saying why), an explicit mode wins
// over CI, and OPENMAX_RECORD_MODE wins over the test's option.
func TestModeResolution(t *testing.T) {
	srv, calls := upstream(t)
	dir := t.TempDir()

	noModeEnv(t)
	t.Setenv(mode.CIEnv, "true")
	p1 := filepath.Join(dir, "ci.yaml")
	_, msg := run("TestCI", func(tb vcr.TB) { post(t, vcr.New(tb, vcr.WithCassette(p1)), srv.URL, `{"a":1}`) })
	if !strings.Contains(msg, "no cassette") || !strings.Contains(msg, "CI=true") || calls.Load() != 0 {
		t.Errorf("under CI=true without a cassette: fatal %q after %d calls; want a refusal naming CI=true and no call", msg, calls.Load())
	}
	ft, msg := run("TestCI", func(tb vcr.TB) {
		post(t, vcr.New(tb, vcr.WithCassette(p1), vcr.WithMode(vcr.RecordOnce)), srv.URL, `{"a":1}`)
	})
	if msg != "" || len(ft.errs) > 0 || calls.Load() != 1 {
		t.Errorf("an explicit once under CI=true: fatal %q, errors %s, %d calls", msg, ft.failures(), calls.Load())
	}

	t.Setenv(vcr.ModeEnv, "refresh")
	run("TestCI", func(tb vcr.TB) {
		post(t, vcr.New(tb, vcr.WithCassette(p1), vcr.WithMode(vcr.ReplayOnly)), srv.URL, `{"a":1}`)
	})
	if calls.Load() != 2 {
		t.Errorf("%s=refresh did not win over WithMode(ReplayOnly): %d calls", vcr.ModeEnv, calls.Load())
	}
	t.Setenv(vcr.ModeEnv, "sometimes")
	if _, msg := run("TestCI", func(tb vcr.TB) { vcr.New(tb, vcr.WithCassette(p1)) }); !strings.Contains(msg, `unknown record mode "sometimes"`) {
		t.Errorf("a bad %s: %q", vcr.ModeEnv, msg)
	}
}

// TestModePassthrough: a passthrough host is reached in replay mode, and
// nothing of it is recorded.
func TestModePassthrough(t *testing.T) {
	noModeEnv(t)
	srv, _ := upstream(t)
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "local") }))
	defer local.Close()
	path := filepath.Join(t.TempDir(), "p.yaml")
	run("TestP", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path), vcr.WithPassthrough(local.URL))
		post(t, rt, srv.URL, `{"a":1}`)
		if _, got := post(t, rt, local.URL, `{"b":1}`); got != "local" {
			t.Errorf("passthrough while recording: %q", got)
		}
	})
	if f, err := cassette.Load(path); err != nil || len(f.Interactions) != 1 {
		t.Fatalf("the passthrough request was recorded, or the cassette is bad: %v", err)
	}
	ft, msg := run("TestP", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path), vcr.WithMode(vcr.ReplayOnly), vcr.WithPassthrough(strings.TrimPrefix(local.URL, "http://")))
		post(t, rt, srv.URL, `{"a":1}`)
		if _, got := post(t, rt, local.URL, `{"b":1}`); got != "local" {
			t.Errorf("passthrough while replaying: %q", got)
		}
	})
	if msg != "" || len(ft.errs) > 0 {
		t.Errorf("fatal %q, errors %s", msg, ft.failures())
	}
}

// missingChildEnv makes the test binary a mode-missing recording that runs
// until killed (TestModeMissingChild); its value is the cassette path.
const missingChildEnv = "OPENMAX_VCR_MISSING_CHILD"

// childBody is the upstream's reply to request n: a stream of a size that
// varies up to several pages, with characters of several bytes.
func childBody(n int) string {
	return fmt.Sprintf(`{"n":%d,"text":"%s"}`, n, strings.Repeat("é日x", (n*37)%1500))
}

// TestModeMissingChild is what TestModeMissingKilled kills; it does nothing
// in an ordinary run. It replays requests 0..seeded-1 from the cassette
// and sends new ones upstream without end, printing "done N" once request
// N's reply was read to its end.
func TestModeMissingChild(t *testing.T) {
	path := os.Getenv(missingChildEnv)
	if path == "" {
		t.Skip("run by TestModeMissingKilled")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Query().Get("n"), "%d", &n)
		io.WriteString(w, childBody(n))
	}))
	defer up.Close()
	run("TestChild", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path), vcr.WithMode(vcr.RecordMissing))
		for n := 0; ; n++ {
			resp, err := (&http.Client{Transport: rt}).Post(fmt.Sprintf("%s/v1/x?n=%d", up.URL, n), "application/json", strings.NewReader(fmt.Sprintf(`{"n":%d}`, n)))
			if err != nil {
				fmt.Printf("error %v\n", err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != childBody(n) {
				fmt.Printf("error reply %d: %d bytes\n", n, len(body))
				return
			}
			fmt.Printf("done %d\n", n)
		}
	})
}

// TestModeMissingKilled kills a mode-missing recording (a child process,
// SIGKILL) at random points while it appends; each time the cassette loads
// with openmax's reader and with stock go-vcr, its first interactions (the
// seeded ones) are byte for byte what they were, and it holds every
// request whose reply the child had read to its end.
// OPENMAX_CRASH_SEED=N replays a run.
func TestModeMissingKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process several times")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("OPENMAX_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with OPENMAX_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	noModeEnv(t)

	// The seed cassette: requests 0..2, recorded once.
	seedPath := filepath.Join(t.TempDir(), "seed.yaml")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Query().Get("n"), "%d", &n)
		io.WriteString(w, childBody(n))
	}))
	run("TestSeed", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(seedPath))
		for n := range 3 {
			resp, err := (&http.Client{Transport: rt}).Post(fmt.Sprintf("%s/v1/x?n=%d", up.URL, n), "application/json", strings.NewReader(fmt.Sprintf(`{"n":%d}`, n)))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	up.Close()
	seedData, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	seeded := itemTexts(t, seedPath)

	dir := t.TempDir()
	for it := range 8 {
		path := filepath.Join(dir, fmt.Sprintf("c%d.yaml", it))
		if err := os.WriteFile(path, seedData, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestModeMissingChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), missingChildEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := rng.IntN(40)
		done := -1
		sc := bufio.NewScanner(out)
		for done < killAfter && sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "done "):
				done, _ = strconv.Atoi(strings.TrimPrefix(l, "done "))
			case strings.HasPrefix(l, "error"):
				t.Fatalf("iteration %d: the child: %s", it, l)
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, out)
		cmd.Wait()
		if done < killAfter {
			t.Fatalf("iteration %d: the child stopped at request %d: %s", it, done, stderr.String())
		}

		f, err := cassette.Load(path)
		if err != nil {
			t.Fatalf("iteration %d (killed after request %d): %v", it, done, err)
		}
		if _, err := stock.Load(strings.TrimSuffix(path, ".yaml")); err != nil {
			t.Fatalf("iteration %d: stock go-vcr: %v", it, err)
		}
		if len(f.Interactions) < done+1 {
			t.Errorf("iteration %d: %d interactions, but request %d was read to its end", it, len(f.Interactions), done)
		}
		for i, x := range f.Interactions {
			if want := childBody(i); x.Response.Body != want {
				t.Errorf("iteration %d: interaction %d is not whole (%d bytes, want %d)", it, i, len(x.Response.Body), len(want))
			}
		}
		data, _ := os.ReadFile(path)
		for i, s := range seeded {
			if !bytes.Contains(data, s) {
				t.Errorf("iteration %d: seeded interaction %d is not byte for byte in the file", it, i)
			}
		}
		t.Logf("iteration %d: killed after request %d: %d interactions", it, done, len(f.Interactions))
	}
}

// TestPrune: a replay with Prune that served every request removes the
// interactions it never asked for, keeping the others byte for byte; the
// test does not fail on them, and the next replay is clean.
func TestPrune(t *testing.T) {
	noModeEnv(t)
	t.Setenv(vcr.PruneEnv, "")
	srv, _ := upstream(t)
	path := filepath.Join(t.TempDir(), "p.yaml")
	run("TestP", func(tb vcr.TB) {
		rt := vcr.New(tb, vcr.WithCassette(path))
		for _, b := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
			post(t, rt, srv.URL, b)
		}
	})
	before := itemTexts(t, path)
	replayOnly := func(opts ...vcr.Option) *fakeT {
		ft, msg := run("TestP", func(tb vcr.TB) {
			rt := vcr.New(tb, append([]vcr.Option{vcr.WithCassette(path), vcr.WithMode(vcr.ReplayOnly)}, opts...)...)
			post(t, rt, srv.URL, `{"n":1}`)
			post(t, rt, srv.URL, `{"n":3}`)
		})
		if msg != "" {
			t.Fatalf("fatal %q", msg)
		}
		return ft
	}
	if ft := replayOnly(); !strings.Contains(ft.failures(), "never requested") {
		t.Fatalf("without Prune an unused interaction does not fail the test: %q", ft.failures())
	}
	if ft := replayOnly(vcr.Prune()); len(ft.errs) > 0 {
		t.Fatalf("with Prune: %s", ft.failures())
	}
	after := itemTexts(t, path)
	if len(after) != 2 || !bytes.Equal(after[0], before[0]) || !bytes.Equal(after[1], before[2]) {
		t.Fatalf("pruned to %d interactions, not 0 and 2 byte for byte", len(after))
	}
	if _, err := stock.Load(strings.TrimSuffix(path, ".yaml")); err != nil {
		t.Errorf("stock go-vcr: %v", err)
	}
	if ft := replayOnly(); len(ft.errs) > 0 {
		t.Errorf("the replay after pruning: %s", ft.failures())
	}
}
