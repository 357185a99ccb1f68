#!/bin/sh
# ws_agent.sh: a scripted coding agent for the workspace tests
# (tests/workspace_test.go), run by the exec runner as the implementer in
# the task's worktree. It reads Drover's request (JSON) on stdin, appends
# "<task> <attempt>" to $AGENT_CALL_LOG, a file or a recorder URL
# (testdata/record.sh; calls are counted there), waits
# until the file $AGENT_WAIT names exists when it names one, and edits
# the worktree as the task ID's prefix says:
#   edit-*    writes tasks/<task>.txt and appends a line to shared.txt
#   commit-*  the same, then commits it itself (git add -A; git commit)
#   nothing-* changes nothing
#   delete-*  deletes doomed.txt
#   binary-*  writes a binary file, bin/<task>.bin
#   big-*     writes big.txt, about 150 KB (its patch goes to the blob store)
#   tested-*  the same as edit-*, plus a test file, src/<task>_test.go
# A later attempt appends "attempt N" to tasks/<task>.txt.
set -eu
. "$(dirname "$0")/record.sh"
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
attempt=$(printf '%s\n' "$req" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
if [ -z "$task" ] || [ -z "$attempt" ]; then
	echo "ws_agent.sh: no task or attempt in the request" >&2
	exit 3
fi
if [ "$(pwd -P)" != "$(cd "$DROVER_WORKSPACE" && pwd -P)" ]; then
	echo "ws_agent.sh: not run in DROVER_WORKSPACE" >&2
	exit 4
fi
echo "$task $attempt" | record "$AGENT_CALL_LOG"
if [ -n "${AGENT_WAIT:-}" ]; then
	# the test kills the worker meanwhile
	while [ ! -e "$AGENT_WAIT" ]; do
		sleep 0.05
	done
fi
edit() {
	mkdir -p tasks
	if [ "$attempt" -gt 1 ]; then
		echo "attempt $attempt" >>"tasks/$task.txt"
	else
		echo "change of $task" >"tasks/$task.txt"
		echo "$task was here" >>shared.txt
	fi
}
case $task in
edit-*) edit ;;
commit-*)
	edit
	git add -A
	git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "agent: $task by itself"
	;;
tested-*)
	edit
	printf 'package src\n\n// a test of %s\n' "$task" >"src/${task}_test.go"
	;;
nothing-*) ;;
delete-*) rm doomed.txt ;;
binary-*)
	mkdir -p bin
	printf '\000\001\002\377\376binary of %s\000\n' "$task" >"bin/$task.bin"
	;;
big-*)
	i=0
	while [ $i -lt 3000 ]; do
		echo "line $i of a generated file, long enough to need the blob store"
		i=$((i + 1))
	done >big.txt
	;;
*)
	echo "ws_agent.sh: unknown task kind $task" >&2
	exit 5
	;;
esac
echo "{\"change\": \"did $task attempt $attempt\", \"files\": [], \"notes\": \"scripted\"}"
