package codexscenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/openmax/openmax/provider/codex"
	"github.com/openmax/openmax/replay/appserver"
)

// Replay is a Harness whose clients talk to the fake app-server replaying
// a scenario's transcripts, one per client in order: in process
// (replay/appserver.Serve over pipes, codex.Connect) or, with Command set,
// as the client's binary (`openmax fake-app-server --transcript F`,
// codex.Start). Finish checks every replay.
type Replay struct {
	// Command, when set, is the fake app-server's program and leading
	// arguments (e.g. the openmax binary and "fake-app-server"); the
	// harness adds --transcript and --log.
	Command []string

	dir   string
	files []string
	raw   [][]byte
	ts    []*appserver.Transcript

	mu   sync.Mutex
	runs []*replayRun
}

// replayRun is one client and its replay.
type replayRun struct {
	cl     *codex.Client
	rec    *Recording
	served chan error // in process: Serve's result
	log    string     // as a process: its --log file
	stderr *Recording // as a process: its stderr
	lines  int        // the transcript's lines
}

// NewReplay makes a harness replaying files (client 1's transcript
// first) to clients working in dir.
func NewReplay(dir string, files []string) (*Replay, error) {
	r := &Replay{dir: dir}
	for _, f := range files {
		f, err := filepath.Abs(f) // the fake app-server runs in dir
		if err != nil {
			return nil, err
		}
		r.files = append(r.files, f)
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		t, err := appserver.Parse(bytes.NewReader(b), 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		r.raw, r.ts = append(r.raw, b), append(r.ts, t)
	}
	return r, nil
}

// Dir implements Harness.
func (r *Replay) Dir() string { return r.dir }

// Start implements Harness: the next transcript's replay.
func (r *Replay) Start(ctx context.Context, o codex.Options) (*codex.Client, error) {
	r.mu.Lock()
	n := len(r.runs)
	r.mu.Unlock()
	if n >= len(r.ts) {
		return nil, fmt.Errorf("%w (%d transcripts)", ErrNoClient, len(r.ts))
	}
	run := &replayRun{rec: &Recording{}, lines: len(r.ts[n].Lines)}
	o.Transcript = run.rec
	var cl *codex.Client
	var err error
	if len(r.Command) > 0 {
		run.log = filepath.Join(r.dir, fmt.Sprintf(".fake-app-server-%d.log", n+1))
		run.stderr = &Recording{}
		o.Command = append(append([]string{}, r.Command...), "--transcript", r.files[n], "--log", run.log)
		o.Dir, o.Stderr = r.dir, run.stderr
		cl, err = codex.Start(ctx, o)
	} else {
		toClient, fromServer := io.Pipe()
		fromClient, toServer := io.Pipe()
		run.served = make(chan error, 1)
		t := r.ts[n]
		go func() {
			err := appserver.Serve(ctx, t, fromClient, fromServer, appserver.Options{})
			// The client reads to its end, and its writes fail, not block.
			_ = fromServer.Close()
			_ = fromClient.CloseWithError(errors.New("the fake app-server ended"))
			run.served <- err
		}()
		cl, err = codex.Connect(ctx, toClient, toServer, o)
	}
	if err != nil {
		return nil, err
	}
	run.cl = cl
	r.mu.Lock()
	r.runs = append(r.runs, run)
	r.mu.Unlock()
	return cl, nil
}

// Close closes every client started; Finish does too.
func (r *Replay) Close(ctx context.Context) {
	r.mu.Lock()
	runs := append([]*replayRun(nil), r.runs...)
	r.mu.Unlock()
	for _, run := range runs {
		_ = run.cl.Close(ctx)
	}
}

// Finish closes the clients and checks each replay: every transcript had
// its client, the fake replayed it whole with no miss, and the client's
// own transcript reproduces the recording (CompareTranscripts).
func (r *Replay) Finish(ctx context.Context) error {
	r.Close(ctx)
	r.mu.Lock()
	runs := append([]*replayRun(nil), r.runs...)
	r.mu.Unlock()
	var errs []error
	if len(runs) != len(r.ts) {
		errs = append(errs, fmt.Errorf("the scenario started %d clients for %d transcripts", len(runs), len(r.ts)))
	}
	for i, run := range runs {
		if err := run.check(ctx, len(r.Command) > 0); err != nil {
			errs = append(errs, fmt.Errorf("client %d (%s): %w", i+1, filepath.Base(r.files[i]), err))
			continue
		}
		if err := CompareTranscripts(r.raw[i], run.rec.Bytes(), RecordedDir(r.raw[i]), r.dir); err != nil {
			errs = append(errs, fmt.Errorf("client %d (%s): %w", i+1, filepath.Base(r.files[i]), err))
		}
	}
	return errors.Join(errs...)
}

// check waits for the replay's end and the client's last transcript line.
func (run *replayRun) check(ctx context.Context, process bool) error {
	if process {
		// Close waited for the process; its log says how it ended.
		log, err := os.ReadFile(run.log)
		if err != nil {
			return err
		}
		want := fmt.Sprintf("all %d lines replayed", run.lines)
		if !strings.Contains(string(log), want) || len(run.stderr.Bytes()) > 0 {
			return fmt.Errorf("the fake app-server did not report %q:\nstderr: %s\nlog tail: %s", want, run.stderr.Bytes(), tail(log, 2000))
		}
	} else {
		select {
		case err := <-run.served:
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
		case <-ctx.Done():
			return fmt.Errorf("replay did not end: %w", ctx.Err())
		}
	}
	return run.rec.WaitLines(ctx, run.lines)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
