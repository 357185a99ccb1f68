#!/bin/sh
# session_judge.sh: the judge of the agent session tests
# (tests/agents_session_test.go). It rejects attempt 1 and approves the
# next. On rejecting, with JUDGE_WIPE set it removes Claude Code's state
# from the task's private HOME (so the next attempt can resume only from
# the session kept in the object store, as on another worker), and with
# JUDGE_WAIT naming a file it waits until that file exists (the test
# removes the kept session meanwhile). Its stdin is Drover's exec input,
# whose keys are sorted: "attempt" comes first.
set -eu
req=$(cat)
attempt=$(printf '%s\n' "$req" | head -n 1 | cut -c 1-40 | sed -n 's/^{"attempt":\([0-9]*\).*/\1/p')
if [ "$attempt" = 1 ]; then
	if [ -n "${JUDGE_WIPE:-}" ]; then
		rm -rf "$HOME/.claude"
	fi
	if [ -n "${JUDGE_WAIT:-}" ]; then
		while [ ! -e "$JUDGE_WAIT" ]; do
			sleep 0.05
		done
	fi
	echo '{"verdict": "reject", "feedback": "add a test that checks hello.txt"}'
else
	echo '{"verdict": "approve", "feedback": "hello.txt and its test are there"}'
fi
