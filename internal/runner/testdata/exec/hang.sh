#!/bin/sh
# Starts a child that would outlive it, records the child's PID in the file
# named by $1 (written whole, then renamed), and waits forever.
sleep 300 &
echo $! > "$1.tmp" && mv "$1.tmp" "$1"
wait
