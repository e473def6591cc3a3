// Package shard splits a run of many independent items (the cassettes of
// `openmax replay DIR`, the fault variants of `openmax cassette sweep`, the
// subtests of goldens.Run) into N parts, one per CI machine, without a
// scheduler: every machine computes the same plan from the same item keys
// and runs only its own part.
//
// The plan is complete and disjoint: every key belongs to exactly one
// shard, so the union of the N shards is exactly the unsharded run. By
// default a key's shard is a hash of the key (FNV-1a), so adding an item
// moves no other. With the durations of a previous run (Timings, read from
// a JUnit report) the keys are balanced instead: longest first, each to the
// least loaded shard; keys the report does not know count as the mean of
// those it does.
//
// The shard comes from a --shard K/N flag (1-based, as a CI matrix counts)
// or, without one, from the environment of the CI engine that runs the
// command (Detect): Bazel, CircleCI, Buildkite, GitLab, a Kubernetes Indexed
// Job, or OPENMAX_SHARD.
package shard

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
)

// Spec is one shard of a split run. The zero Spec is the whole run.
type Spec struct {
	Index int // 0-based
	Total int // number of shards; 0 or 1 is the whole run
}

// Whole is the unsharded run.
var Whole = Spec{}

// Sharded reports whether s is a proper part of the run.
func (s Spec) Sharded() bool { return s.Total > 1 }

// String is s as --shard takes it, "K/N" with K 1-based; the whole run is
// "1/1".
func (s Spec) String() string {
	if s.Total <= 1 {
		return "1/1"
	}
	return fmt.Sprintf("%d/%d", s.Index+1, s.Total)
}

// FlagUsage is the help of a --shard flag; every command that takes one
// uses it.
const FlagUsage = "run only shard K of N (K/N, 1-based: 1/4 to 4/4); the N shards together are exactly the unsharded run. " +
	"Without it the shard comes from the CI engine's environment (" + EngineNames + ")"

// ShardsUsage is the help of a --shards flag.
const ShardsUsage = "the number of shards when the environment gives only the index (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX)"

// TimingsUsage is the help of a --timings flag.
const TimingsUsage = "balance the shards by the testcase durations of this JUnit report from a previous run (the same file on every shard)"

// ErrSpec marks a malformed shard specification.
var ErrSpec = errors.New("shard")

// Parse reads "K/N": 1 <= K <= N.
func Parse(s string) (Spec, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Spec{}, fmt.Errorf("%w: %q is not K/N (say 2/4 for the second of four shards)", ErrSpec, s)
	}
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("%w: %q is not K/N with whole numbers", ErrSpec, s)
	}
	return New(ki-1, ni)
}

// New is the shard of 0-based index out of total, checked.
func New(index, total int) (Spec, error) {
	if total < 1 {
		return Spec{}, fmt.Errorf("%w: %d shards: want at least 1", ErrSpec, total)
	}
	if index < 0 || index >= total {
		return Spec{}, fmt.Errorf("%w: shard %d of %d: K must be from 1 to %d", ErrSpec, index+1, total, total)
	}
	if total == 1 {
		return Whole, nil
	}
	return Spec{Index: index, Total: total}, nil
}

// Of is the 0-based shard key hashes to among total.
func Of(key string, total int) int {
	if total <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(total))
}

// Timings are durations in seconds by key, from a previous run.
type Timings map[string]float64

// Plan assigns every key to one of total shards: by Of without timings,
// else balanced by them (see the package documentation). The plan depends
// only on the set of keys, total and timings, never on their order.
func Plan(keys []string, total int, t Timings) map[string]int {
	owner := make(map[string]int, len(keys))
	if total <= 1 {
		for _, k := range keys {
			owner[k] = 0
		}
		return owner
	}
	if len(t) == 0 {
		for _, k := range keys {
			owner[k] = Of(k, total)
		}
		return owner
	}
	var sum float64
	var known int
	for _, k := range keys {
		if d, ok := t[k]; ok && d >= 0 {
			sum += d
			known++
		}
	}
	mean := 1.0
	if known > 0 && sum > 0 {
		mean = sum / float64(known)
	}
	type item struct {
		key string
		d   float64
	}
	items := make([]item, 0, len(keys))
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		d, ok := t[k]
		if !ok || d < 0 {
			d = mean
		}
		items = append(items, item{k, d})
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].d != items[j].d {
			return items[i].d > items[j].d
		}
		return items[i].key < items[j].key
	})
	load := make([]float64, total)
	for _, it := range items {
		best := 0
		for s := 1; s < total; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		load[best] += it.d
		owner[it.key] = best
	}
	return owner
}

// Pick returns the keys of shard s, in their given order.
func (s Spec) Pick(keys []string, t Timings) []string {
	if !s.Sharded() {
		return keys
	}
	owner := Plan(keys, s.Total, t)
	var out []string
	for _, k := range keys {
		if owner[k] == s.Index {
			out = append(out, k)
		}
	}
	return out
}
