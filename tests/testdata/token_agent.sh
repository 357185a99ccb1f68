#!/bin/sh
# token_agent.sh ROLE: a hostile agent for tests/tokens_test.go. It was given
# the forge token ($DROVER_TEST_FORGE_TOKEN) and the model key
# ($DROVER_TEST_MODEL_KEY) and prints both, plain, base64 and hex, on stderr
# on every call and in every answer. It saves each request it reads in
# $TOKEN_AGENT_DIR/<role>.<task>.<attempt>.<n>.json (the feedback it is given
# included).
#   implementer: task "fail*" always exits 1; any other fails its first call
#                (exit 1, tokens on stderr), then edits its own file.
#   judge:       rejects attempt 1 with the tokens in its feedback, then
#                approves, with the tokens in its reasoning.
set -eu
role=$1
. "$(dirname "$0")/record.sh"
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
attempt=$(printf '%s\n' "$req" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
n=$(list "$TOKEN_AGENT_DIR" | grep -c "^$role\.$task\.$attempt\." || true)
printf '%s\n' "$req" | record_new "$TOKEN_AGENT_DIR/$role.$task.$attempt.$n.json"
f=$DROVER_TEST_FORGE_TOKEN
k=$DROVER_TEST_MODEL_KEY
f64=$(printf '%s' "$f" | base64 | tr -d '\n')
k64=$(printf 'Bearer %s' "$k" | base64 | tr -d '\n')
fhex=$(printf '%s' "$f" | od -An -tx1 | tr -d ' \n')
all="forge $f ($f64, $fhex) model $k ($k64)"
echo "$role: $all" >&2
case $role in
implementer)
	case $task in
	fail*)
		echo "auth failed: $all" >&2
		exit 1
		;;
	esac
	if [ "$n" = 0 ] && [ "$attempt" = 1 ]; then
		echo "auth failed: $all" >&2
		exit 1
	fi
	mkdir -p tasks
	echo "attempt $attempt of $task" >"tasks/$task.txt"
	echo "{\"change\": \"used $all\", \"files\": [\"tasks/$task.txt\"], \"notes\": \"$f64 $k64\"}"
	;;
judge)
	if [ "$attempt" = 1 ]; then
		echo "{\"verdict\": \"reject\", \"feedback\": \"do not hard-code $all\"}"
	else
		echo "{\"verdict\": \"approve\", \"feedback\": \"fine, $all\", \"reasoning\": \"$f64\"}"
	fi
	;;
esac
