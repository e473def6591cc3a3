# An external tool for tests that never ends on its own.
echo started
exec sleep 1000
