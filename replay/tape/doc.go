// Package tape records and replays harness sessions: both directions of
// one tape. Record runs the live harness with its provider traffic going
// through a recorder and captures, beside it in the cassette, the harness
// configuration, the client's commands with the protocol point each
// arrived at, and the tools' results. Replay rebuilds the same harness
// (core/harness) from that configuration and plays the session back
// through the real stdio server and turn engine, offline, on virtual time,
// delivering each recorded command at the point it was sent at.
package tape
