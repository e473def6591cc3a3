#!/bin/sh
# Runs in the test's runfiles: the library and the binary beside it.
exec ./openmax replay lib
