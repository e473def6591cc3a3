// Package appserver plays codex app-server from a recorded transcript
// (provider/codex/transcript's {"dir","msg"} lines, which provider/codex
// records), so a codex client can be tested against it with no codex
// installed: it is the fake app-server behind `openmax fake-app-server`.
// It reads and writes codex's JSON-RPC through internal/jsonrpc (the Bare
// dialect).
//
// # Replay
//
// Serve walks the transcript in order. A "recv" line (one the app-server
// sent) is written to the client; a "send" line (one the client sent) is
// awaited from the client and matched against the recording. Consecutive
// "send" lines form one group that the client may send in any order (a
// client answering a tool call while another goroutine steers the turn);
// the lines of a group are otherwise matched in recorded order and each at
// most once. A recorded line that was not JSON (kept as a JSON string) is
// written back as its text.
//
// # Normalisation
//
// The client's lines are compared with the recorded ones as parsed JSON
// values (key order, white space and escaping do not matter; numbers
// compare by their literal text) after these rules, applied to both sides:
//
//	what            where                                  rule
//	request id      top-level "id" of a line with "method"  not compared ("<request id>"); on a match the
//	                                                        client's id is remembered for the recorded one,
//	                                                        and recorded responses carrying that id are
//	                                                        written with the client's id as it sent it
//	response id     top-level "id" of a line without        compared: the client answers a server request
//	                "method"                                with the id the fake wrote, the recorded one
//	timestamps      values of TimestampKeys, at any depth,  compared as "<timestamp>"
//	                that are numbers
//	email           values of "email", at any depth         compared as "[redacted]" (the recording
//	                (not objects or arrays)                 redacted them)
//	client version  IgnoredMembers: initialize's            compared as "<ignored>" (a golden transcript
//	                params.clientInfo.version               outlives a release)
//	learned paths   string values of LearnedKeys ("cwd"),   the first time the client's value differs from
//	                at any depth, when the recorded value   the recorded one, recorded → client's is learned;
//	                is an absolute path other than "/"      from then on the recorded path is replaced by the
//	                                                        client's wherever it stands as a path in a
//	                                                        recorded string ("/r/w", "/r/w/x", "cd /r/w &&",
//	                                                        not "/r/wx" or "/x/r/w"), both when matching and
//	                                                        in every line written back
//
// A learned path is kept only when the line it was learned from matches
// with it, and a recorded path once learned keeps its mapping (a later
// different value for it is a miss); a path under it may be learned on its
// own, and the longest learned path wins. Nothing else is rewritten: the app-server's own values (thread and turn
// ids, timestamps, its CODEX_HOME) are written back byte for byte as
// recorded, so a client echoing them in later requests matches, and the
// same transcript and the same client lines always give the same output
// bytes. A member the client adds or drops ("jsonrpc" included) is a miss.
//
// # Misses and the end
//
// A client line that matches no line of the current group is a miss: Serve
// answers it (when it is a request) with a JSON-RPC error whose message
// holds a line diff of the normalised recorded and received messages, and
// returns a *MissError with the same text. When the client closes its
// stdin, Serve returns nil if the whole transcript was replayed, or a
// *LeftoverError listing the lines never reached. Lines are bounded by
// Options.MaxLine (the transcript's by Parse's maxLine); a longer line is an
// error naming it.
package appserver
