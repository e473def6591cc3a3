package recache

import (
	"fmt"
	"regexp"
	"sync"
	"testing"
)

// TestCompileCaches: the same pattern gives the same compiled value, from
// many goroutines at once; past the bound, patterns still compile but are
// not kept.
func TestCompileCaches(t *testing.T) {
	mu.Lock()
	cache = map[string]*regexp.Regexp{} // every run races on a new pattern
	mu.Unlock()
	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = Compile(`a(b+)c`) }()
	}
	wg.Wait()
	for _, g := range got[1:] {
		if g != got[0] {
			t.Fatal("the same pattern compiled twice")
		}
	}
	if !Compile(`a(b+)c`).MatchString("abbc") {
		t.Fatal("the cached pattern does not match")
	}
	for i := range maxEntries + 10 {
		Compile(fmt.Sprintf("x%d", i))
	}
	mu.Lock()
	n := len(cache)
	mu.Unlock()
	if n > maxEntries {
		t.Errorf("%d entries kept, bound %d", n, maxEntries)
	}
	if !Compile("x1030").MatchString("x1030") {
		t.Error("a pattern past the bound does not compile")
	}
}
