#!/bin/sh
# leaky_agent.sh ROLE: a careless agent for tests/redact_test.go. It prints
# $LEAKY_API_TOKEN, a secret of its environment, to stderr on every call and
# into every answer. The implementer of a task whose id starts with "fail"
# always fails; of any other task it fails on its first call, then succeeds.
# The judge rejects attempt 1 (its feedback quotes the secret) and approves
# the next.
set -eu
want=$1
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
attempt=$(printf '%s\n' "$req" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
echo "$want: calling the API with token $LEAKY_API_TOKEN" >&2
case $want in
planner) echo "{\"plan\": \"call the API with $LEAKY_API_TOKEN\"}" ;;
implementer)
	mark="$LEAKY_STATE/$task.implementer"
	case $task in
	fail*)
		echo "auth failed for $LEAKY_API_TOKEN" >&2
		exit 1
		;;
	esac
	if [ ! -e "$mark" ]; then
		: >"$mark"
		echo "auth failed for $LEAKY_API_TOKEN" >&2
		exit 1
	fi
	echo "Done. {\"change\": \"set the header to $LEAKY_API_TOKEN\"}"
	;;
judge)
	if [ "$attempt" = 1 ]; then
		echo "{\"verdict\": \"reject\", \"feedback\": \"do not hard-code $LEAKY_API_TOKEN\"}"
	else
		echo '{"verdict": "approve", "feedback": "ok"}'
	fi
	;;
esac
