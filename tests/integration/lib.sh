# Shared helpers for shell integration tests. Source it: . "$(dirname "$0")/lib.sh"
#
# Conventions: exit 0 pass, 1 fail, 77 skip. Under CI=true a skip is a failure (CI machines
# have root, /dev/userfaultfd and /dev/fuse). Each test gets a private $T_TMP, removed at exit
# unless THPEMU_KEEP_TMP=1; test artefacts meant for humans go to $T_OUT
# ($THPEMU_BUILD_DIR/test-output/<test>), which is kept.

set -u
T_NAME=$(basename "$0" .sh)
: "${THPEMU_BUILD_DIR:?THPEMU_BUILD_DIR must point at the build directory}"
: "${THPEMU_SOURCE_DIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
THPEMU="$THPEMU_BUILD_DIR/thpemu"
FUSEDEV="$THPEMU_BUILD_DIR/thpemu-fusedev"
USEMEM="$THPEMU_BUILD_DIR/usemem"
LIBTHPEMU="$THPEMU_BUILD_DIR/libthpemu.so"
T_TMP=$(mktemp -d "/tmp/thpemu-$T_NAME.XXXXXX")
T_OUT="$THPEMU_BUILD_DIR/test-output/$T_NAME"
mkdir -p "$T_OUT"
T_CLEANUP=()

t_cleanup() {
	local i
	for ((i = ${#T_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${T_CLEANUP[$i]}" >/dev/null 2>&1 || true
	done
	[ "${THPEMU_KEEP_TMP:-0}" = 1 ] || rm -rf "$T_TMP"
}
trap t_cleanup EXIT
# at_exit CMD: run CMD (a string) at exit, last registered first.
at_exit() { T_CLEANUP+=("$1"); }

say() { printf '%s: %s\n' "$T_NAME" "$*"; }
fail() {
	printf '%s: FAIL: %s\n' "$T_NAME" "$*" >&2
	exit 1
}
skip() {
	printf '%s: skip: %s\n' "$T_NAME" "$*" >&2
	if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
		printf '%s: CI=true: a skip is a failure here\n' "$T_NAME" >&2
		exit 1
	fi
	exit 77
}
need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
need_uffd() {
	[ -e /dev/userfaultfd ] || [ "$(id -u)" = 0 ] || skip "no /dev/userfaultfd"
	if [ "$(id -u)" = 0 ] || { [ -r /dev/userfaultfd ] && [ -w /dev/userfaultfd ]; } ||
		[ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" = 1 ]; then
		return 0
	fi
	skip "needs root, /dev/userfaultfd access or vm.unprivileged_userfaultfd=1"
}
need_fuse() {
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	command -v fusermount3 >/dev/null || skip "fusermount3 not installed (package fuse3)"
}
need_cmd() { command -v "$1" >/dev/null || skip "$1 not installed"; }

# expect_eq NAME ACTUAL EXPECTED
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }
# json FILE JQ-FILTER: print a value from a JSON file
json() { jq -r "$2" "$1"; }

# run_report NAME POLICY [RUN-OPTION...] -- PROGRAM [ARG...]: PROGRAM under `thpemu run --quiet
# --policy POLICY`; its report in $T_OUT/NAME.json, its standard output in $T_OUT/NAME.out. A run
# that fails fails the test, naming the program's output and thpemu's last lines.
run_report() {
	local name=$1 policy=$2
	shift 2
	"$THPEMU" run --quiet --policy "$policy" --report "$T_OUT/$name.json" "$@" \
		>"$T_OUT/$name.out" 2>"$T_TMP/$name.err" ||
		fail "$name: $(cat "$T_OUT/$name.out") $(tail -3 "$T_TMP/$name.err")"
}

# bad_usage WANT ARGS...: `thpemu ARGS` exits 2 with one stderr line containing WANT (fixed
# string); its output is left in $T_TMP/out and $T_TMP/err.
bad_usage() {
	local want=$1 rc
	shift
	"$THPEMU" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	[ $rc = 2 ] || fail "'$*': exit status $rc, expected 2 ($(cat "$T_TMP/err"))"
	[ "$(wc -l <"$T_TMP/err")" = 1 ] || fail "'$*': not one line: $(cat "$T_TMP/err")"
	grep -qF -- "$want" "$T_TMP/err" || fail "'$*': message lacks '$want': $(cat "$T_TMP/err")"
}
