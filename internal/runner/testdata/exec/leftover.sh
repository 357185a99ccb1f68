#!/bin/sh
# Leaves a process in its own session holding stdout, records its PID in
# the file named by $1, answers and exits 0.
setsid sleep 300 &
echo $! > "$1.tmp" && mv "$1.tmp" "$1"
echo '{"plan": "left a process behind"}'
