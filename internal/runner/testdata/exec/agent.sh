#!/bin/sh
# An agent CLI's stand-in: saves its stdin to AGENT_STDIN (when set),
# prints the captured output named by AGENT_OUT and the text AGENT_TEXT,
# and exits with AGENT_EXIT (default 0).
if [ -n "$AGENT_STDIN" ]; then cat >"$AGENT_STDIN"; else cat >/dev/null; fi
[ -n "$AGENT_OUT" ] && cat "$AGENT_OUT"
[ -n "$AGENT_TEXT" ] && printf '%s\n' "$AGENT_TEXT"
exit "${AGENT_EXIT:-0}"
