package scan

import (
	"os"
	"testing"
)

// BenchmarkLibrary scans every recording of the repository once per
// iteration (bench/scan.sh measures the binary).
func BenchmarkLibrary(b *testing.B) {
	files, errs := Files([]string{moduleRootB(b)})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	var size int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	b.SetBytes(size)
	for b.Loop() {
		for _, f := range files {
			if _, err := File(f, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
