#!/bin/sh
# ws_judge.sh: a recording judge for the workspace tests
# (tests/workspace_test.go), run by the exec runner in the task's worktree.
# It checks that it runs in the task's worktree (DROVER_WORKSPACE) and that
# an edit-* task's file is there to test, writes Drover's request (its
# stdin: the rendered prompt with the diff) to
# $JUDGE_DIR/<task>.<attempt>.<unique>.json (a directory or a recorder
# URL, testdata/record.sh), then, when $JUDGE_WAIT names a
# file, waits until that file exists (the test kills the worker meanwhile),
# and approves.
set -eu
. "$(dirname "$0")/record.sh"
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
attempt=$(printf '%s\n' "$req" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
if [ "$(pwd -P)" != "$(cd "$DROVER_WORKSPACE" && pwd -P)" ]; then
	echo "ws_judge.sh: not run in DROVER_WORKSPACE" >&2
	exit 4
fi
case $task in
edit-*)
	if [ ! -f "tasks/$task.txt" ]; then
		echo "ws_judge.sh: the worktree lacks the change to judge" >&2
		exit 5
	fi
	;;
esac
printf '%s\n' "$req" | record_new "$JUDGE_DIR/$task.$attempt.$(unique).json"
if [ -n "${JUDGE_WAIT:-}" ]; then
	while [ ! -e "$JUDGE_WAIT" ]; do
		sleep 0.05
	done
fi
echo '{"verdict": "approve", "feedback": "the diff is fine"}'
