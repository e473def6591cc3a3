package harness

import "github.com/openmax/openmax/core/runconfig"

// The configuration lives in core/runconfig (a leaf, so a cassette can
// hold it); these names keep the harness's API whole.

// Config is a session's configuration (runconfig.Config).
type Config = runconfig.Config

const (
	Version              = runconfig.Version
	DefaultMaxReplyBytes = runconfig.DefaultMaxReplyBytes
)

// Defaults is the configuration of a session no flag changed.
func Defaults() Config { return runconfig.Defaults() }

// FromArgs is the configuration the harness flags args describe.
func FromArgs(args []string) (Config, error) { return runconfig.FromArgs(args) }
