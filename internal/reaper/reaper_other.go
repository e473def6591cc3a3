//go:build !linux

package reaper

import "errors"

// Enable is not supported here: no child subreaper.
func Enable() (*Reaper, error) { return nil, errors.ErrUnsupported }

// Reaper is a no-op here.
type Reaper struct{}

// Stop does nothing.
func (*Reaper) Stop(killOrphans bool) {}
