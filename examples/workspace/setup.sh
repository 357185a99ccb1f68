#!/bin/sh
# Makes the demo's repository: a small project in DIR/project, pushed to a
# bare repository DIR/remote.git that Drover clones and pushes to, and puts
# the scripted agent in DIR/agent.sh (the implementer runs in each task's
# worktree, so the config names it by an absolute path).
# Usage: sh examples/workspace/setup.sh [DIR]   (default /tmp/drover-demo)
set -eu
dir=${1:-/tmp/drover-demo}
if [ -e "$dir" ]; then
	echo "$dir exists; remove it first (rm -rf $dir)" >&2
	exit 1
fi
mkdir -p "$dir/project"
cp "$(dirname "$0")/agent.sh" "$dir/agent.sh"
cd "$dir/project"
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@localhost GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@localhost
git init -q -b main
cat > README.md <<'MD'
# Greeter

A tiny project the demo's agent edits.
MD
cat > NOTES.md <<'MD'
# Notes

Each task appends a line below.
MD
mkdir -p src
printf 'def greet(name):\n    return "Hello, " + name\n' > src/greet.py
printf 'SECRET=demo-only\n' > .env
printf '.env\n' > .gitignore
git add -A
git commit -q -m "initial"
git clone -q --bare . "$dir/remote.git"
git -C "$dir/remote.git" config core.logAllRefUpdates always
echo "repository: $dir/remote.git (main at $(git rev-parse --short HEAD))"
