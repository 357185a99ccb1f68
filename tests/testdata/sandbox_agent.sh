#!/bin/sh
# sandbox_agent.sh: an exec implementer for tests/sandbox_test.go, run in
# the sandbox. Every task writes tasks/<task>.txt. A hostile-* task first
# attacks: it writes README.md in every other worktree of the worker, points
# the mirror's hooks elsewhere, drops a hook in the mirror, moves the
# remote-tracking ref, and leaves a process running (its command line holds
# $LEFTOVER). It prints what succeeded, so the test sees each attack fail.
set -u
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
case $task in
hostile-*)
	for d in "$(dirname "$DROVER_WORKSPACE")"/*; do
		[ "$d" = "$DROVER_WORKSPACE" ] && continue
		echo pwned >"$d/README.md" 2>/dev/null && echo "wrote $d"
	done
	common=$(git rev-parse --git-common-dir)
	git config core.hooksPath /tmp 2>/dev/null && echo "wrote the mirror's config"
	echo '#!/bin/sh' >"$common/hooks/post-commit" 2>/dev/null && echo "wrote a hook"
	git update-ref refs/remotes/origin/main HEAD 2>/dev/null && echo "moved a ref"
	sleep "$LEFTOVER" >/dev/null 2>&1 &
	;;
esac
mkdir -p tasks
echo "change of $task" >"tasks/$task.txt"
echo "$task done"
