echo "bad input" >&2
exit 3
