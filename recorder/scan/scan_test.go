package scan

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestCorpusFindsEveryPlant: every fake secret planted in the corpus
// (each named format in a header, a query value, a JSON body, an SSE
// event, a gzip body and eventstream frames; the secrets known by their
// place; high-entropy tokens) is found with its rule, line, interaction
// and place, and nothing else is: the corpus's ids, signatures,
// encrypted content, padding and Cloudflare cookies are no findings.
func TestCorpusFindsEveryPlant(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		data, want := buildCorpus(seed)
		path := filepath.Join(t.TempDir(), "corpus.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := File(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Kind != "cassette" || len(res.Problems) > 0 {
			t.Fatalf("seed %d: kind %q, problems %v", seed, res.Kind, res.Problems)
		}
		got := map[string]bool{}
		for _, f := range res.Findings {
			got[findingKey(f.Rule, f.Line, f.Interaction, f.Where, f.Fingerprint)] = true
		}
		matched := map[string]bool{}
		for _, e := range want {
			found := ""
			for _, f := range res.Findings {
				if f.Rule == e.rule && f.Line == e.line && f.Interaction == e.ix && strings.Contains(f.Where, e.where) &&
					(e.value == "" || f.Fingerprint == Fingerprint(e.rule, e.value)) {
					found = findingKey(f.Rule, f.Line, f.Interaction, f.Where, f.Fingerprint)
					break
				}
			}
			if found == "" {
				t.Errorf("seed %d: not found: %s at line %d, interaction %d, %q", seed, e.rule, e.line, e.ix, e.where)
				for _, f := range res.Findings {
					if f.Interaction == e.ix {
						t.Logf("  in that interaction: %s", f)
					}
				}
				continue
			}
			matched[found] = true
		}
		for _, f := range res.Findings {
			if !matched[findingKey(f.Rule, f.Line, f.Interaction, f.Where, f.Fingerprint)] {
				t.Errorf("seed %d: a finding no plant explains: %s", seed, f)
			}
		}
		if seed == 1 {
			rules := map[string]bool{}
			for _, e := range want {
				rules[e.rule] = true
			}
			for _, r := range Rules() {
				if !rules[r] {
					t.Errorf("the corpus plants nothing for rule %s", r)
				}
			}
			t.Logf("%d plants, %d findings", len(want), len(res.Findings))
		}
	}
}

func findingKey(rule string, line, ix int, where, fp string) string {
	return fmt.Sprintf("%s|%d|%d|%s|%s", rule, line, ix, where, fp)
}

// TestNoSecretInOutput: a finding holds no secret whole: its Secret is
// at most four characters and an ellipsis, and no field of it contains
// the planted value.
func TestNoSecretInOutput(t *testing.T) {
	data, want := buildCorpus(7)
	res := Bytes("corpus.yaml", data, Options{})
	var all strings.Builder
	for _, f := range res.Findings {
		fmt.Fprintln(&all, f.String(), f.Where, f.Secret)
		if r := []rune(f.Secret); len(r) > 5 || r[len(r)-1] != '…' {
			t.Errorf("secret shown as %q", f.Secret)
		}
	}
	for _, e := range want {
		if e.value != "" && strings.Contains(all.String(), e.value[:min(len(e.value), 12)]) {
			t.Errorf("the output holds the first 12 characters of a %s secret", e.rule)
		}
	}
}

// TestAllowlist: each kind of entry allows what it names and no more, a
// bad line is an error naming its line and not echoing it whole.
func TestAllowlist(t *testing.T) {
	data, want := buildCorpus(1)
	base := Bytes("c.yaml", data, Options{})
	var bearer expected
	for _, e := range want {
		if e.rule == RuleBearer {
			bearer = e
		}
	}
	for _, tt := range []struct {
		name  string
		allow string
		gone  func(f Finding) bool
	}{
		{"fingerprint", Fingerprint(RuleBearer, bearer.value), func(f Finding) bool { return f.Fingerprint == Fingerprint(RuleBearer, bearer.value) }},
		{"value", "value:" + bearer.value, func(f Finding) bool { return f.Fingerprint == Fingerprint(RuleBearer, bearer.value) }},
		{"regexp", `re:sk-ant-.*`, func(f Finding) bool { return f.Rule == RuleAnthropic }},
		{"rule", "rule:" + RuleEntropy, func(f Finding) bool { return f.Rule == RuleEntropy }},
	} {
		a, err := ParseAllowlist("allow", []byte("# known fakes\n\n"+tt.allow+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		res := Bytes("c.yaml", data, Options{Allow: a})
		gone := 0
		for _, f := range base.Findings {
			if tt.gone(f) {
				gone++
			}
		}
		if gone == 0 || len(res.Findings) != len(base.Findings)-gone {
			t.Errorf("%s: %d findings, want %d (%d allowed)", tt.name, len(res.Findings), len(base.Findings)-gone, gone)
		}
		for _, f := range res.Findings {
			if tt.gone(f) {
				t.Errorf("%s: still found: %s", tt.name, f)
			}
		}
	}
	for _, bad := range []string{"sk-proj-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "rule:no-such-rule", "re:(", "openai-key:xyz"} {
		_, err := ParseAllowlist("allow", []byte("# ok\n"+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "allow:2:") || strings.Contains(err.Error(), "AAAAAAAAAAAA") {
			t.Errorf("%q: error %v; want one naming allow:2 without the line whole", bad, err)
		}
	}
}

// TestLibraryScansClean: every recording of the repository (the library,
// the real recordings, the goldens, every testdata directory) gives no
// finding and no problem: what a pre-commit hook over the repository
// sees.
func TestLibraryScansClean(t *testing.T) {
	root := moduleRoot(t)
	files, errs := Files([]string{root})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	kinds := map[string]int{}
	var size int64
	for _, f := range files {
		res, err := File(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		kinds[res.Kind]++
		size += res.Bytes
		for _, fd := range res.Findings {
			t.Errorf("%s", fd)
		}
		for _, p := range res.Problems {
			t.Errorf("%s", p)
		}
	}
	for _, dir := range []string{"cassettes", "cassettes/real", "golden/cassettes", "golden/sessions", "recorder/edit/testdata"} {
		n := 0
		for _, f := range files {
			if strings.HasPrefix(f, filepath.Join(root, dir)+string(filepath.Separator)) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no file of %s was scanned", dir)
		}
	}
	if kinds["cassette"] < 80 {
		t.Errorf("only %d files read as cassettes", kinds["cassette"])
	}
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	sort.Strings(keys)
	t.Logf("%d files (%s), %d bytes", len(files), strings.Join(keys, ", "), size)
}

// moduleRoot is the directory of go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	return moduleRootB(t)
}

func moduleRootB(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
