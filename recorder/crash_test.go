package recorder

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/openmax/openmax/recorder/cassette"
)

// crashChildEnv makes the test binary a recording that runs until killed
// (TestCrashChild); its value is the cassette path.
const crashChildEnv = "OPENMAX_RECORDER_CRASH_CHILD"

// crashBody is the reply to request id: a stream of a size that varies
// from a few bytes to several pages, with characters of several bytes, so
// saves cross page boundaries.
func crashBody(id int) []string {
	var parts []string
	for i := range 1 + id%4 {
		parts = append(parts, fmt.Sprintf("data: {\"id\":%d,\"part\":%d,\"text\":\"%s\"}\n\n", id, i, strings.Repeat("é日x", (id*37)%1500)))
	}
	return parts
}

// TestCrashChild is the recording TestKillAtRandomPointsLeavesLoadableCassettes
// kills; it does nothing in an ordinary run. Two clients send requests
// through the recording proxy without pause; it prints "done ID" once a
// client has read a reply to its end, and "session N" once a session with
// N commands has been flushed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("run by TestKillAtRandomPointsLeavesLoadableCassettes")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/v1/"))
		for _, p := range crashBody(id) {
			io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	rec, err := New(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	px := httptest.NewServer(NewProxy(u, rec))
	defer px.Close()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := 2*i + c
				if c == 0 && i%3 == 0 {
					s := &cassette.Session{SessionID: "s-crash", Seed: 1}
					for k := range i/3 + 1 {
						s.Commands = append(s.Commands, cassette.Command{Line: fmt.Sprintf(`{"cmd":"user","text":"%d"}`, k)})
					}
					rec.StageSession(s)
					if err := rec.FlushSession(); err != nil {
						say("error %v", err)
						return
					}
					say("session %d", len(s.Commands))
				}
				resp, err := http.Post(px.URL+"/v1/"+strconv.Itoa(id), "application/json", strings.NewReader(`{"id":`+strconv.Itoa(id)+`}`))
				if err != nil {
					say("error %v", err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != strings.Join(crashBody(id), "") {
					say("error reading %d: %v", id, err)
					return
				}
				say("done %d", id)
			}
		}()
	}
	wg.Wait()
}

// TestKillAtRandomPointsLeavesLoadableCassettes runs a recording in a child
// process and kills it (SIGKILL) at random points, over and over; each time
// the cassette must load, with Load and with stock go-vcr, and hold every
// interaction whose client had read the end of its reply, whole, and the
// session with at least the commands flushed. OPENMAX_CRASH_SEED=N replays
// a run.
func TestKillAtRandomPointsLeavesLoadableCassettes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process a dozen times")
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
	dir := t.TempDir()
	noSession, kills := 0, 12
	if raceEnabled {
		kills = 4
	}
	for it := range kills {
		path := filepath.Join(dir, fmt.Sprintf("c%d.yaml", it))
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 1 + rng.IntN(120)
		done := map[int]bool{}
		sessionAt := 0
		sc := bufio.NewScanner(out)
		lines := 0
		for lines < killAfter && sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "done "):
				id, _ := strconv.Atoi(strings.TrimPrefix(l, "done "))
				done[id] = true
			case strings.HasPrefix(l, "session "):
				sessionAt, _ = strconv.Atoi(strings.TrimPrefix(l, "session "))
			case strings.HasPrefix(l, "error"):
				t.Fatalf("iteration %d: the child: %s", it, l)
			default:
				continue // the test framework's own lines
			}
			lines++
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, out)
		cmd.Wait()
		if lines < killAfter {
			t.Fatalf("iteration %d: the child stopped after %d lines: %s", it, lines, stderr.String())
		}

		f, err := cassette.Load(path)
		if err != nil {
			data, _ := os.ReadFile(path)
			os.WriteFile(filepath.Join(os.TempDir(), "crash-failed.yaml"), data, 0o644)
			t.Fatalf("iteration %d (killed after %d lines): %v (the file is in %s)", it, killAfter, err, filepath.Join(os.TempDir(), "crash-failed.yaml"))
		}
		if _, err := vcr.Load(strings.TrimSuffix(path, ".yaml")); err != nil {
			t.Fatalf("iteration %d: stock go-vcr: %v", it, err)
		}
		have := map[int]bool{}
		for _, x := range f.Interactions {
			id, _ := strconv.Atoi(strings.TrimPrefix(x.Request.URL[strings.LastIndex(x.Request.URL, "/"):], "/"))
			if x.Response.Body != strings.Join(crashBody(id), "") || x.Stream.Error != nil {
				t.Errorf("iteration %d: interaction %d is not whole: %d bytes, error %+v", it, id, len(x.Response.Body), x.Stream.Error)
			}
			have[id] = true
		}
		for id := range done {
			if !have[id] {
				t.Errorf("iteration %d: request %d was read to its end but is not in the cassette (%d interactions)", it, id, len(f.Interactions))
			}
		}
		switch {
		case f.Session == nil && sessionAt > 0:
			noSession++ // a kill between the two writes that replace a session over a page
		case f.Session != nil && len(f.Session.Commands) < sessionAt:
			t.Errorf("iteration %d: the session holds %d commands, %d were flushed", it, len(f.Session.Commands), sessionAt)
		}
		t.Logf("iteration %d: killed after %d lines: %d interactions (%d read to the end), session %v", it, killAfter, len(f.Interactions), len(done), f.Session != nil)
	}
	if noSession > 1 {
		t.Errorf("%d of %d kills left no session: the window between two writes is hit far more often than it should be", noSession, kills)
	}
}
