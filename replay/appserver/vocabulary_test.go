package appserver_test

import (
	"testing"

	"github.com/openmax/openmax/provider/codex"
	"github.com/openmax/openmax/replay/appserver"
)

// TestVocabulary: the package reads transcripts in provider/codex's
// words, which it spells out to stay importable from that package's
// tests.
func TestVocabulary(t *testing.T) {
	for _, tt := range []struct{ codex, here string }{
		{codex.DirSend, appserver.DirSend},
		{codex.DirRecv, appserver.DirRecv},
		{codex.Redacted, appserver.Redacted},
	} {
		if tt.codex != tt.here {
			t.Errorf("provider/codex says %q, replay/appserver %q", tt.codex, tt.here)
		}
	}
}
