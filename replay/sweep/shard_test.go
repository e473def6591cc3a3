package sweep

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/openmax/openmax/internal/rapidchecks"
	"github.com/openmax/openmax/internal/shard"
	"github.com/openmax/openmax/recorder/cassette"
)

// verdictByOp is a replayer whose verdict depends on the fault injected:
// one op in three loses a done, so shards hold passes and failures both.
func verdictByOp(_ context.Context, f *cassette.File) (Result, error) {
	h := fnv.New32a()
	h.Write([]byte(faulted(f)))
	if op := faulted(f); op != "" && h.Sum32()%3 == 0 {
		return Result{Stdout: lines(hello, bud, tok, msg, done("stop"))}, nil
	}
	return Result{Stdout: lines(hello, bud, tok, msg, done("stop"), bud, tok, msg, done("stop"))}, nil
}

// TestShardUnionRapid: over random libraries (cassettes of random
// interactions and chunks, and one cassette whose unmodified replay
// fails), random N and variant bounds, the N shards' rows are disjoint,
// and together, put back in the unsharded order, they are the unsharded
// sweep's rows, verdicts included. Every shard's failed count is its own
// rows', and OnReplay sees exactly the shard's rows. (Each draw runs N+1 sweeps: the suite draws few; it passed 1,000
// under -race with -rapid.checks=1000.)
func TestShardUnionRapid(t *testing.T) {
	rapidchecks.Use(t, rapidchecks.Pick(60, 15))
	rapid.Check(t, func(t *rapid.T) {
		var cs []Cassette
		for i := range rapid.IntRange(1, 4).Draw(t, "cassettes") {
			var its []*cassette.Interaction
			for range rapid.IntRange(1, 3).Draw(t, "interactions") {
				var chunks []string
				for k := range rapid.IntRange(1, 4).Draw(t, "chunks") {
					chunks = append(chunks, fmt.Sprintf("data: {\"content\":\"c%d\"}\n\n", k))
				}
				its = append(its, sse(append(chunks, "data: [DONE]\n\n")...))
			}
			f := twoTurns()
			f.Interactions = append(f.Interactions, its...)
			cs = append(cs, Cassette{Name: fmt.Sprintf("c%d.yaml", i), File: f})
		}
		broken := rapid.IntRange(-1, len(cs)-1).Draw(t, "broken") // its unmodified replay fails
		replay := func(ctx context.Context, f *cassette.File) (Result, error) {
			if broken >= 0 && f == cs[broken].File {
				return Result{Stdout: lines(hello)}, nil
			}
			return verdictByOp(ctx, f)
		}
		o := Options{MaxVariants: rapid.IntRange(0, 12).Draw(t, "max"), Parallel: 2}
		whole, err := Run(context.Background(), cs, replay, o)
		if err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(1, 7).Draw(t, "n")
		got := map[string]Row{}
		for k := range n {
			so := o
			so.Shard.Spec, _ = shard.New(k, n)
			var mu sync.Mutex
			seen := map[string]Row{}
			so.OnReplay = func(row Row, _ *cassette.File, _ Result) {
				mu.Lock()
				defer mu.Unlock()
				seen[Key(row.Cassette, row.Variant)] = row
			}
			part, err := Run(context.Background(), cs, replay, so)
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, r := range part.Rows {
				key := Key(r.Cassette, r.Variant)
				if _, dup := got[key]; dup {
					t.Fatalf("row %q in two shards", key)
				}
				got[key] = r
				if !r.OK() {
					failed++
				}
			}
			if len(seen) != len(part.Rows) {
				t.Fatalf("shard %d/%d: OnReplay saw %d rows, the shard has %d", k+1, n, len(seen), len(part.Rows))
			}
			for _, r := range part.Rows {
				if !reflect.DeepEqual(seen[Key(r.Cassette, r.Variant)], r) {
					t.Fatalf("shard %d/%d: OnReplay's row %+v, the report's %+v", k+1, n, seen[Key(r.Cassette, r.Variant)], r)
				}
			}
			if failed != part.Failed {
				t.Fatalf("shard %d/%d: Failed %d, its rows have %d", k+1, n, part.Failed, failed)
			}
		}
		if len(got) != len(whole.Rows) {
			t.Fatalf("the shards hold %d rows, the whole sweep %d", len(got), len(whole.Rows))
		}
		for _, r := range whole.Rows {
			if g := got[Key(r.Cassette, r.Variant)]; !reflect.DeepEqual(g, r) {
				t.Fatalf("row %s %s: sharded %+v, whole %+v", r.Cassette, r.Variant, g, r)
			}
		}
	})
}

// TestShardFilterAndTimings: the environment's test filter narrows the
// rows before the split, and timings move a slow variant to a shard of its
// own.
func TestShardFilterAndTimings(t *testing.T) {
	cs := []Cassette{{Name: "a.yaml", File: twoTurns()}}
	whole, err := Run(context.Background(), cs, good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Rows) < 3 {
		t.Fatalf("want a few variants, got %d rows", len(whole.Rows))
	}
	only, err := Run(context.Background(), cs, good, Options{Shard: shard.Env{TestOnly: "^a.yaml none$"}})
	if err != nil || len(only.Rows) != 1 || only.Rows[0].Variant != None {
		t.Fatalf("the filter kept %v (%v)", only.Rows, err)
	}
	slow := Key("a.yaml", whole.Rows[1].Variant)
	tm := shard.Timings{slow: 1000}
	for _, r := range whole.Rows {
		if k := Key(r.Cassette, r.Variant); k != slow {
			tm[k] = 1
		}
	}
	for k := range 2 {
		spec, _ := shard.New(k, 2)
		part, err := Run(context.Background(), cs, good, Options{Shard: shard.Env{Spec: spec}, Timings: tm})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range part.Rows {
			if Key(r.Cassette, r.Variant) == slow && len(part.Rows) != 1 {
				t.Errorf("the slow variant shares shard %d with %d rows", k+1, len(part.Rows)-1)
			}
		}
	}
}
