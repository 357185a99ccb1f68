#!/bin/sh
# agent.sh ROLE: a stand-in agent CLI for the exec runner's end-to-end test
# (tests/runners_test.go). It reads Drover's request (JSON, one line) on
# stdin, checks that it is for ROLE and that $DROVER_PROMPT holds ROLE's
# prompt, appends one line per call to $AGENT_CALL_LOG, and answers on
# stdout as ROLE would.
set -eu
want=$1
req=$(cat)
# The request's keys come in any order (the runner sorts them) and its
# task carries keys of its own (metadata, verification, type): the role is
# the first "role" key outside a string (inside one it is \"role\").
role=$(printf '%s\n' "$req" | grep -o '"role":"[a-z]*"' | head -n 1 | sed 's/^"role":"\([a-z]*\)"$/\1/')
if [ "$role" != "$want" ]; then
	echo "agent.sh: request for role '$role', want '$want'" >&2
	exit 3
fi
case "${DROVER_PROMPT:-}" in
"You are the $want"*) ;;
*)
	echo "agent.sh: DROVER_PROMPT is not the $want prompt" >&2
	exit 4
	;;
esac
echo "$role" >>"$AGENT_CALL_LOG"
case $role in
planner) echo '{"plan": "do it", "steps": ["write", "test"]}' ;;
implementer) echo 'Done. {"change": "did it", "files": ["a.go"], "notes": "go test passes"}' ;;
judge) echo '{"verdict": "approve", "feedback": "ok"}' ;;
esac
