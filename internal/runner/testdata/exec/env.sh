#!/bin/sh
# Records what it was given in files under $DROVER_TEST_OUT and answers
# with a plan.
out=$DROVER_TEST_OUT
printf '%s' "${DROVER_TEST_LEAK-unset}" > "$out/leak"
printf '%s' "${DROVER_TEST_KEEP-unset}" > "$out/keep"
printf '%s' "${DROVER_PROMPT-unset}" > "$out/prompt_env"
printf '%s' "${DROVER_PROMPT_FILE-unset}" > "$out/prompt_file_path"
if [ -n "$DROVER_PROMPT_FILE" ]; then cat "$DROVER_PROMPT_FILE" > "$out/prompt_file"; fi
printf '%s' "$DROVER_ROLE" > "$out/role"
pwd > "$out/pwd"
echo '{"plan": "checked the environment"}'
