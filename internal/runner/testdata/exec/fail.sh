#!/bin/sh
# Writes some output, complains on stderr and exits 3.
cat >/dev/null
echo 'partial output'
echo "fatal: $1" >&2
exit 3
