#!/bin/sh
# priced_agent.sh ROLE: a stand-in agent CLI that answers as ROLE would and
# then prints its usage and cost as an agent CLI's JSON result does
# (planner $0.20, implementer $0.50, judge $0.30), for the budget tests
# (tests/budget_test.go).
set -eu
cat >/dev/null
case "$1" in
planner) echo '{"plan":"do it","steps":["one"]}'; cost=0.2 ;;
implementer) echo '{"change":"done"}'; cost=0.5 ;;
judge) echo '{"verdict":"approve","feedback":"ok"}'; cost=0.3 ;;
*) echo "priced_agent.sh: unknown role $1" >&2; exit 3 ;;
esac
echo "{\"type\":\"result\",\"usage\":{\"input_tokens\":100,\"output_tokens\":10},\"total_cost_usd\":$cost}"
