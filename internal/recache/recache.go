// Package recache compiles regular expressions once per process: the
// replay matcher and the recorder's scrubber build the same patterns for
// every session they serve, and a sweep serves thousands of sessions.
//
// Concurrency: Compile is safe for concurrent use, and so is the
// *regexp.Regexp it returns.
package recache

import (
	"regexp"
	"sync"
)

// maxEntries bounds the cache: patterns made of a session's own secrets
// differ from session to session, and a long-running server must not
// keep them all. Past the bound, patterns are compiled afresh.
const maxEntries = 1024

var (
	mu    sync.Mutex
	cache = map[string]*regexp.Regexp{}
)

// Compile is regexp.MustCompile(pattern), from the cache when the same
// pattern was compiled before; callers racing on a new pattern all get
// the value the first of them stored. It panics on a pattern that does not
// compile, as MustCompile does: callers pass patterns they built.
func Compile(pattern string) *regexp.Regexp {
	mu.Lock()
	re, ok := cache[pattern]
	mu.Unlock()
	if ok {
		return re
	}
	re = regexp.MustCompile(pattern)
	mu.Lock()
	defer mu.Unlock()
	if first, ok := cache[pattern]; ok {
		return first // compiled meanwhile by another caller: one value for all
	}
	if len(cache) < maxEntries {
		cache[pattern] = re
	}
	return re
}
