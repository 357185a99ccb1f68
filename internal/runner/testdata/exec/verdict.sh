#!/bin/sh
# Answers like a chatty model: prose, then the verdict in a markdown fence.
cat >/dev/null
echo 'Here is my review.'
echo '```json'
echo '{"verdict": "REJECT", "reasons": ["no restart test", "lint fails"]}'
echo '```'
