package codex

// Regenerate the protocol types from the codex CLI on PATH (or $CODEX):
// the schema bundle and the CLI version are kept in schema/, and
// protocol.gen.go is written from them. Offline, from the kept schema:
// go run ./internal/gen -schema schema
//go:generate go run ./internal/gen -schemadir schema -out protocol.gen.go
