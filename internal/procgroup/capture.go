package procgroup

import "sync"

// Capture is the bounded output of a Run: an io.Writer that keeps the
// first Max bytes written to it and counts them all. It is safe for
// concurrent use.
type Capture struct {
	Max int

	mu    sync.Mutex
	kept  []byte
	total int
}

// Write keeps what fits under Max and counts all of p; it never fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += len(p)
	if room := c.Max - len(c.kept); room > 0 {
		c.kept = append(c.kept, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Kept is what was kept: the first Max bytes written, or all of them.
func (c *Capture) Kept() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kept
}

// Total is how many bytes were written.
func (c *Capture) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}
