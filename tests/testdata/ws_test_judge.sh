#!/bin/sh
# ws_test_judge.sh: a strict judge for the replay workspace tests
# (tests/replay_ws_test.go), run by the exec runner in the task's worktree.
# It writes Drover's request (its stdin: the rendered prompt with the diff)
# to $JUDGE_DIR/<task>.<attempt>.<pid>.json, checks that the worktree holds
# the change it judges (tasks/<task>.txt), and approves only a change whose
# diff adds a Go test file (a path ending in _test.go), else rejects.
set -eu
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
attempt=$(printf '%s\n' "$req" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
printf '%s\n' "$req" >"$JUDGE_DIR/$task.$attempt.$$.json.tmp"
mv "$JUDGE_DIR/$task.$attempt.$$.json.tmp" "$JUDGE_DIR/$task.$attempt.$$.json"
if [ ! -f "tasks/$task.txt" ]; then
	echo "ws_test_judge.sh: the worktree lacks the change to judge" >&2
	exit 5
fi
if printf '%s\n' "$req" | grep -q '+++ b/[^ ]*_test\.go'; then
	echo '{"verdict": "approve", "feedback": "the change is tested"}'
else
	echo '{"verdict": "reject", "feedback": "the change adds no test"}'
fi
