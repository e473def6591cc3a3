// Package codex drives `codex app-server` over its stdio JSON-RPC
// protocol: the types generated from the server's own schema
// (protocol.gen.go), the client that launches the server and speaks to it,
// and the transcript every line of a session can be recorded to.
package codex
