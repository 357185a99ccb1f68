# record.sh: sourced by the scripted agents of the tests. A target is a
# file or, for an agent drover serve runs in the sandbox (which lets it
# write nowhere the test reads), a URL of the test's recorder
# (tests/recorder_test.go).

# record TARGET: appends stdin to TARGET.
record() {
	case $1 in
	http://*) curl -fsS --noproxy '*' --max-time 30 --data-binary @- "$1" >/dev/null ;;
	*) cat >>"$1" ;;
	esac
}

# record_new TARGET: writes stdin to TARGET, a new file, at once.
record_new() {
	case $1 in
	http://*) record "$1" ;;
	*) cat >"$1.tmp" && mv "$1.tmp" "$1" ;;
	esac
}

# list DIR: the names in DIR, a directory or a recorder URL, one a line.
list() {
	case $1 in
	http://*) curl -fsS --noproxy '*' --max-time 30 "$1/" ;;
	*) ls "$1" ;;
	esac
}

# unique: a string no other call has (the sandbox's process IDs repeat).
unique() {
	echo "$$.$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
}
