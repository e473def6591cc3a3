package appserver

// The transcript's vocabulary, for the external test that checks it
// against provider/codex.
const (
	DirSend  = dirSend
	DirRecv  = dirRecv
	Redacted = redacted
)
