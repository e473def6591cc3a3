package report_test

import (
	"context"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openmax/openmax/recorder/cassette"
	"github.com/openmax/openmax/recorder/edit"
	"github.com/openmax/openmax/recorder/replay"
	"github.com/openmax/openmax/replay/report"
	"github.com/openmax/openmax/replay/sweep"
	"github.com/openmax/openmax/replay/tape"
)

// library is the repository's recorded library.
const library = "../../cassettes"

// engineReplayer replays a cassette through the engine, as `openmax
// cassette sweep` does; brokenKind, when set, drops the last line of the
// transcript of every variant with a fault of that kind, so the sweep
// sees a user command without its done.
func engineReplayer(brokenKind string) sweep.Replayer {
	return func(ctx context.Context, f *cassette.File) (sweep.Result, error) {
		r, err := tape.Replay(ctx, f, tape.ReplayOptions{Serving: replay.Options{Ignore: []string{"tools"}}})
		if err != nil {
			return sweep.Result{}, err
		}
		out := r.Stdout
		for _, it := range f.Interactions {
			if op := it.Response.Headers.Get(edit.InjectedHeader); brokenKind != "" && strings.HasPrefix(op, brokenKind+"@") {
				lines := strings.SplitAfter(strings.TrimSuffix(string(out), "\n"), "\n")
				out = []byte(strings.Join(lines[:len(lines)-1], ""))
				break
			}
		}
		return sweep.Result{Stdout: out, Exit: r.Exit}, nil
	}
}

// outputDir is where the screenshots go: the test runner's undeclared
// outputs when it names them, else the test's own folder (logged).
func outputDir(t *testing.T) string {
	if d := os.Getenv("TEST_UNDECLARED_OUTPUTS_DIR"); d != "" {
		return d
	}
	return t.TempDir()
}

// suiteDir is a folder of two library cassettes whose golden files say
// one thing else: a suite with a failure.
func suiteDir(t *testing.T) (dir, goldenDir string) {
	root := t.TempDir()
	dir, goldenDir = filepath.Join(root, "suite"), filepath.Join(root, "golden")
	for _, d := range []string{dir, goldenDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"story", "quota_429"} {
		data, err := os.ReadFile(filepath.Join(library, name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644)
		g, err := os.ReadFile(filepath.Join("../../golden/cassettes", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if name == "story" { // the golden file remembers another reply
			g = []byte(strings.Replace(string(g), "Record and replay keeps ", "Record and replay kept ", 1))
		}
		os.WriteFile(filepath.Join(goldenDir, name+".golden"), g, 0o644)
	}
	return dir, goldenDir
}

// TestBrowser loads the report's pages from disk in headless Chromium
// and checks what a person sees: a mark per recorded chunk, the
// Retry-After bar as long as the recorded wait, each failing sweep cell
// linking to a page that exists and names the broken invariant; no
// console error on any page, and no request leaving the file system.
func TestBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	started := time.Now()
	b := startBrowser(t, ctx)
	shots := outputDir(t)

	dir, goldenDir := suiteDir(t)
	site, err := report.Build(ctx, dir, report.Options{Golden: goldenDir, Serving: replay.Options{Ignore: []string{"tools"}},
		Sweep: engineReplayer("500"), SweepOptions: sweep.Options{MaxVariants: 60}})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := site.Write(out); err != nil {
		t.Fatal(err)
	}
	page := func(rel string) string { return (&url.URL{Scheme: "file", Path: filepath.Join(out, rel)}).String() }
	check := func(name string) {
		t.Helper()
		errs, away := b.problems()
		for _, e := range errs {
			t.Errorf("%s: %s", name, e)
		}
		for _, u := range away {
			t.Errorf("%s: a request left the file system: %s", name, u)
		}
	}
	shot := func(name string) {
		t.Helper()
		path := filepath.Join(shots, name)
		if err := os.WriteFile(path, b.screenshot(t, ctx), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", path)
	}

	// The story cassette: marks and the Retry-After bar against the
	// recording itself.
	story, err := cassette.Load(filepath.Join(library, "story.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b.open(t, ctx, page("cassettes/story.html"))
	var ixs []struct {
		I, Chunks, Marks, Elements int
		Bar                        *struct{ Width, Track, Scale, MS float64 }
	}
	b.eval(t, ctx, `[...document.querySelectorAll('.ix')].map(ix => {
		const bar = ix.querySelector('.retry-after');
		return {I: +ix.dataset.interaction, Chunks: +ix.dataset.chunks,
			Marks: [...ix.querySelectorAll('.mark')].reduce((n, m) => n + +m.dataset.count, 0),
			Elements: ix.querySelectorAll('.mark').length,
			Bar: bar && {Width: bar.getBoundingClientRect().width, Track: ix.querySelector('.track').getBoundingClientRect().width,
				Scale: +ix.querySelector('.tl').dataset.scaleMs, MS: +bar.dataset.ms}};
	})`, &ixs)
	if len(ixs) != len(story.Interactions) {
		t.Fatalf("story: %d interactions on the page, the cassette has %d", len(ixs), len(story.Interactions))
	}
	bars := 0
	for _, ix := range ixs {
		it := story.Interactions[ix.I]
		if n := len(it.Chunks()); ix.Marks != n || ix.Elements != n || ix.Chunks != n {
			t.Errorf("story #%d: %d marks (%d elements, the page says %d chunks), the cassette has %d chunks", ix.I, ix.Marks, ix.Elements, ix.Chunks, n)
		}
		ra := it.Response.Headers.Get("Retry-After")
		if ra == "" {
			if ix.Bar != nil {
				t.Errorf("story #%d: a Retry-After bar, and no Retry-After recorded", ix.I)
			}
			continue
		}
		secs, err := strconv.ParseFloat(ra, 64)
		if err != nil {
			t.Fatalf("story #%d: Retry-After %q", ix.I, ra)
		}
		if ix.Bar == nil {
			t.Errorf("story #%d: Retry-After %s recorded, no bar drawn", ix.I, ra)
			continue
		}
		bars++
		drawn := ix.Bar.Width / ix.Bar.Track * ix.Bar.Scale // the bar's length in ms
		if onePixel := ix.Bar.Scale / ix.Bar.Track; math.Abs(drawn-secs*1000) > 2*onePixel {
			t.Errorf("story #%d: the Retry-After bar is %.0f ms long on the page (%.1f of %.1f px), the recording asks %s s", ix.I, drawn, ix.Bar.Width, ix.Bar.Track, ra)
		}
	}
	if bars == 0 {
		t.Error("story: no Retry-After bar checked (the story's 429 asks for a wait)")
	}
	shot("story.png")
	check("story")

	// The failing suite: the failure's golden diff, drawn as a diff.
	b.open(t, ctx, page("index.html"))
	var suite struct {
		Fails, Adds, Dels int
		Links             []string
	}
	b.eval(t, ctx, `({Fails: document.querySelectorAll('#suite td.v-fail').length,
		Adds: document.querySelectorAll('#suite .diff .add').length, Dels: document.querySelectorAll('#suite .diff .del').length,
		Links: [...document.querySelectorAll('#suite a')].map(a => a.href)})`, &suite)
	if suite.Fails != 1 || suite.Adds == 0 || suite.Dels == 0 {
		t.Errorf("suite: %d failing rows, %d added and %d removed diff lines; want 1 failure with its diff", suite.Fails, suite.Adds, suite.Dels)
	}
	for _, l := range suite.Links {
		exists(t, "suite", l)
	}
	shot("suite.png")
	check("suite")

	// The sweep: every failing cell links to its variant's page, which
	// names the invariant it broke.
	b.open(t, ctx, page("sweep/index.html"))
	var cells struct{ Fail, OK []string }
	b.eval(t, ctx, `({Fail: [...document.querySelectorAll('.cell a[data-verdict=fail]')].map(a => a.href),
		OK: [...document.querySelectorAll('.cell a[data-verdict=ok]')].map(a => a.href)})`, &cells)
	if len(cells.Fail) == 0 || len(cells.OK) == 0 {
		t.Fatalf("sweep: %d failing and %d passing cells; the replayer broke every 500", len(cells.Fail), len(cells.OK))
	}
	for _, l := range cells.Fail {
		exists(t, "sweep", l)
	}
	shot("sweep.png")
	check("sweep")
	b.open(t, ctx, cells.Fail[0])
	var broken string
	b.eval(t, ctx, `document.getElementById('broken') ? document.getElementById('broken').textContent : ''`, &broken)
	if !strings.Contains(broken, "done") {
		t.Errorf("variant %s: broken invariant %q, want the missing done", cells.Fail[0], broken)
	}
	check("variant")

	// The zoom and the filter are the only script: they run cleanly.
	b.open(t, ctx, page("cassettes/story.html"))
	var zoomed float64
	b.eval(t, ctx, `document.querySelector('[data-zoom=in]').click(); document.querySelector('[data-zoom=in]').click();
		+getComputedStyle(document.documentElement).getPropertyValue('--zoom')`, &zoomed)
	if zoomed != 4 {
		t.Errorf("zoom: --zoom is %v after zooming in twice, want 4", zoomed)
	}
	check("zoom")
	t.Logf("browser test: %d pages checked in %s", 5, time.Since(started).Round(time.Millisecond))
}

// exists fails t unless the file:// link names a file.
func exists(t *testing.T, where, link string) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "file" {
		t.Errorf("%s: link %q is not a file", where, link)
		return
	}
	if _, err := os.Stat(u.Path); err != nil {
		t.Errorf("%s: link %s: %v", where, link, err)
	}
}
