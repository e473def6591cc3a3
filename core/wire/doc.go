// Package wire is the single definition of the openmax-stdio/6 wire, and
// everything derived from it: what a command, event or other stdout line is,
// how it is framed and written, the contract printed for people and for
// machines, and the checker that validates a stream against that contract.
//
// Every command, event and line has one Def (registry.go) whose Go struct
// (types.go) carries its fields through struct tags (fields.go). From the
// Defs come:
//
//   - the framing: LineReader reads bounded stdin lines (lines.go) and
//     DecodeCommand turns one into a Command (decode.go);
//   - the emitter: AppendEvent, AppendLine and Writer write one whole line
//     each, with session_id and type first (encode.go);
//   - the contract: WriteSpec prints it as text (spec_text.go) and
//     WriteJSONSchema as a JSON Schema (spec_jsonschema.go), the output of
//     openmax --spec stdio;
//   - the checker: Checker and CheckStream validate a stream of openmax
//     stdout line by line, shapes and sequencing, and, given the client's
//     stdin, account every user command's done (check.go, check_input.go,
//     with object.go splitting a line into its members without decoding it
//     into maps).
//
// The package knows nothing of sessions or turns; core/stdio serves a
// session over it and package core produces its events.
package wire
