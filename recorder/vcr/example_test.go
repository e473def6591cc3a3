package vcr_test

import (
	"net/http"
	"testing"

	"github.com/openmax/openmax/recorder/vcr"
)

// A test of code that calls a model API: the first run (or any run with
// OPENMAX_RECORD=1) records testdata/TestSummarise.yaml through the real
// API; every run after replays it offline.
func ExampleNew() {
	testSummarise := func(t *testing.T) {
		client := &http.Client{Transport: vcr.New(t)}
		_ = client // hand it to the OpenAI or Anthropic client under test
	}
	_ = testSummarise
}

// A process that cannot take a RoundTripper (a CLI, an SDK in another
// language) is pointed at a loopback server replaying the cassette.
func ExampleServer() {
	testCLI := func(t *testing.T) {
		base := vcr.Server(t, vcr.WithCassette("testdata/cli.yaml"), vcr.InOrder())
		_ = base // e.g. OPENAI_BASE_URL=base+"/v1" for the child process
	}
	_ = testCLI
}
