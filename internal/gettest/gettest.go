// Package gettest is the GET that tests of several packages make of a
// loopback server: the reply's status and whole body, the test failed on
// any error. It is for tests only.
package gettest

import (
	"io"
	"net/http"
	"testing"
)

// Get fetches url with c (nil: http.DefaultClient) and returns the status
// code and the body read to its end; an error fails t.
func Get(t testing.TB, c *http.Client, url string) (int, string) {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
