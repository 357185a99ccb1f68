#!/bin/sh
# secret_agent.sh: a hostile implementer for the secret scan tests
# (secretscan_test.go). It prints $HOSTILE_TOKEN to stderr and into its
# answer, and by the task ID's prefix writes it into the worktree:
#   plain-*  as is, in leak.env
#   b64-*    base64 of a longer text holding it, in notes/blob.txt
#   hex-*    as hex, in dump.hex
#   msg-*    nothing secret in the files, but commits itself with it in the
#            message (git add -A; git commit)
#   trailer-* nothing secret, but commits itself claiming another task's
#            merge (a Drover-Merge-Head trailer)
#   good-*   nothing secret: good.txt
set -eu
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
echo "calling the API with $HOSTILE_TOKEN" >&2
case $task in
plain-*) printf 'API_TOKEN=%s\n' "$HOSTILE_TOKEN" >leak.env ;;
b64-*)
	mkdir -p notes
	printf 'Authorization: Bearer %s\n' "$HOSTILE_TOKEN" | base64 >notes/blob.txt
	;;
hex-*) printf '%s' "$HOSTILE_TOKEN" | od -An -tx1 | tr -d ' \n' >dump.hex ;;
msg-*)
	echo "a clean file" >msg.txt
	git add -A
	git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "use $HOSTILE_TOKEN"
	;;
trailer-*)
	echo "a clean file" >trailer.txt
	git add -A
	git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "evil" \
		-m "Drover-Merge-Head: 0123456789abcdef0123456789abcdef01234567"
	;;
good-*) echo "a clean change" >good.txt ;;
*)
	echo "secret_agent.sh: unknown task $task" >&2
	exit 5
	;;
esac
echo "{\"change\": \"wrote it with $HOSTILE_TOKEN\"}"
