#!/bin/sh
# Floods stderr, ends it with a last line, and exits 1.
cat >/dev/null
head -c 100000 /dev/zero | tr '\0' x >&2
printf '\nthe last line\n' >&2
exit 1
