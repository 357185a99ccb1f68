#!/bin/sh
# Answers like an agent CLI's JSON result: the verdict, then its usage and
# cost on a line of their own.
cat >/dev/null
echo 'Reviewed the change.'
echo '{"verdict": "approve", "feedback": "tests pass"}'
echo '{"type": "result", "model": "claude-test", "usage": {"input_tokens": 1200, "output_tokens": 300}, "total_cost_usd": 0.042}'
