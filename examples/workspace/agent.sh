#!/bin/sh
# A scripted implementer agent for the demo: Drover's exec runner starts it
# (no shell involved on Drover's side) in the task's worktree, with the
# request as JSON on stdin and DROVER_WORKSPACE, DROVER_BRANCH and
# DROVER_BASE_SHA set. It edits files in its working directory, as a coding
# agent would, and prints its answer as JSON on stdout.
set -eu
# The task's ID, from the request on stdin: {"version":1,...,"task":{"id":"W1",...
task=$(sed -n 's/.*"task":{"id":"\([A-Za-z0-9._-]*\)".*/\1/p' | head -n 1)
if [ -z "$task" ]; then
	echo "no task id (of [A-Za-z0-9._-]) in the request" >&2
	exit 2
fi
mkdir -p tasks
printf 'Task %s was done on branch %s, from %s.\n' "$task" "$DROVER_BRANCH" "$DROVER_BASE_SHA" > "tasks/$task.md"
printf -- '- %s: done\n' "$task" >> NOTES.md
case "$task" in
W1) printf 'def greet(name):\n    return "Hello, " + name + "!"\n' > src/greet.py ;;
W2) rm -f README.md ;;              # a deletion
W3) printf '\000\001\002logo' > logo.bin ;; # a binary file
W4) git add -A && git -c user.name=agent -c user.email=agent@localhost commit -q -m "the agent commits itself" ;;
esac
printf '{"change": "task %s: notes, tasks/%s.md", "files": ["NOTES.md", "tasks/%s.md"]}\n' "$task" "$task" "$task"
