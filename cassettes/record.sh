#!/usr/bin/env bash
# Re-records the cassette library from the fake-provider session cases
# (golden/sessions/http_*.txtar) over real loopback HTTP, then rewrites the
# golden transcripts of their replays. Review the diff.
set -euo pipefail
cd "$(dirname "$0")/.."
OPENMAX_RECORD=1 go test ./cmd/openmax -run 'TestRecordLibrary' -count=1
go test ./cmd/openmax -run 'TestCassetteLibrary' -count=1 -update
