#!/bin/sh
# merge_agent.sh: a scripted coding agent for the merge queue tests
# (tests/merge_test.go), run by the exec runner as the implementer in the
# task's worktree. It reads Drover's request (JSON) on stdin, appends
# "<task> <attempt>" to $AGENT_CALL_LOG and writes tasks/<task>.txt; on its
# first attempt it also breaks the merge as the task ID's prefix says:
#   ok-*     nothing more
#   clash-*  replaces shared.txt with its own line (clash tasks conflict)
#   broken-* writes BROKEN, which the merge check refuses
# A later attempt (after the merge queue sent the task back) writes only
# tasks/<task>.txt: the fix.
set -eu
. "$(dirname "$0")/record.sh"
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
attempt=$(printf '%s\n' "$req" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
if [ -z "$task" ] || [ -z "$attempt" ]; then
	echo "merge_agent.sh: no task or attempt in the request" >&2
	exit 3
fi
echo "$task $attempt" | record "$AGENT_CALL_LOG"
mkdir -p tasks
echo "change of $task" >"tasks/$task.txt"
if [ "$attempt" -eq 1 ]; then
	case $task in
	clash-*) echo "$task was here" >shared.txt ;;
	broken-*) echo "broken by $task" >BROKEN ;;
	esac
fi
echo "{\"change\": \"did $task attempt $attempt\", \"files\": [], \"notes\": \"scripted\"}"
