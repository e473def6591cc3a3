package store

import (
	"fmt"
	"testing"
)

// BenchmarkOpenStart is the session store's share of openmax --stdio's
// exec → hello: Open and Start of a new session in a state directory that
// exists (a user's every-day start) or is new (the first session of the
// project), beside Create, the fully synced creation hello waited for
// before. It runs in the package's temporary directory: set TMPDIR to the
// file system a user's state directory lives on (tmpfs hides the syncs).
func BenchmarkOpenStart(b *testing.B) {
	for _, bc := range []struct {
		name   string
		fresh  bool
		create bool
	}{
		{"existing/Start", false, false},
		{"existing/Create", false, true},
		{"fresh/Start", true, false},
		{"fresh/Create", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			root, project := b.TempDir(), b.TempDir()
			b.ResetTimer()
			for i := range b.N {
				state := root
				if bc.fresh {
					state = fmt.Sprintf("%s/%d", root, i)
				}
				s, err := Open(state, project)
				if err != nil {
					b.Fatal(err)
				}
				id := fmt.Sprintf("s-%08d", i)
				var w *Writer
				if bc.create {
					w, err = s.Create(id)
				} else {
					w, err = s.Start(id)
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := w.Close(); err != nil { // waits for Start's publication, untimed
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
