# An external tool for tests: prints its arguments (stdin), then its
# environment, one variable a line, sorted.
printf 'args: %s\n' "$(cat)"
env | LC_ALL=C sort
