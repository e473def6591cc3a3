package replay

import "errors"

// errClosed is a read of a body after Close, worded as net/http words it.
var errClosed = errors.New("http: read on closed response body")
