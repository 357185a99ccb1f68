#!/bin/sh
# review_agent.sh: a recording coding agent for the review tests
# (tests/review_test.go): it writes Drover's request (its stdin, with the
# rendered prompt) to $PROMPT_DIR/<task>.<attempt>.json, then edits the
# worktree as ws_agent.sh does.
set -eu
. "$(dirname "$0")/record.sh"
req=$(cat)
task=$(printf '%s\n' "$req" | sed -n 's/.*"task":{"id":"\([^"]*\)".*/\1/p')
attempt=$(printf '%s\n' "$req" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
printf '%s\n' "$req" | record_new "$PROMPT_DIR/$task.$attempt.json"
printf '%s\n' "$req" | sh "$(dirname "$0")/ws_agent.sh"
