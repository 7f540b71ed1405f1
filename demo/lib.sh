# shellcheck shell=bash
# demo/lib.sh: what the demo scripts share. Sourced, never run:
#
#   . "$(dirname "$0")/lib.sh"
#
# One-line usage errors (exit 2) and missing tools (exit 1) name the script; options are
# parsed from a list of them; thpemu and usemem are found in --build; outputs go to --out or a
# temporary directory; usemem's summary is said in words; and the side-by-side table has one
# column per policy of ${policies[@]}, read from the JSON reports in $dir.

DEMO_NAME=${0##*/}
DEMO_DIR=$(dirname "${BASH_SOURCE[0]}")
DEMO_BUILD_HINT="(build first: cmake -S . -B build && cmake --build build)"

die_usage() {
	echo "$DEMO_NAME: $*" >&2
	exit 2
}

# demo_options SPEC... -- ARG...: the script's arguments. A SPEC is --NAME, a flag (sets the
# variable NAME to 1), or --NAME=VAR, an option that takes a value (sets VAR). An unknown option
# is refused with the SPECs listed in their order. -h and --help run the script's usage function
# and exit 0. If the script defines demo_check_value, it is called with each option and value
# as they are read, before the value is kept.
demo_options() {
	local _specs=() _accepted="" _spec _opt _found

	while [ "$1" != -- ]; do
		_specs+=("$1")
		_accepted+="${1%%=*}, "
		shift
	done
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		-h | --help)
			usage
			exit 0
			;;
		esac
		_found=0
		for _spec in "${_specs[@]}"; do
			_opt=${_spec%%=*}
			[ "$1" = "$_opt" ] || continue
			_found=1
			if [ "$_spec" = "$_opt" ]; then
				printf -v "${_opt#--}" 1
			else
				[ $# -ge 2 ] || die_usage "$1 needs a value"
				! declare -F demo_check_value >/dev/null || demo_check_value "$1" "$2"
				printf -v "${_spec#*=}" '%s' "$2"
				shift
			fi
			break
		done
		[ $_found = 1 ] || die_usage "unknown option '$1' (accepted: ${_accepted}--help)"
		shift
	done
}

# demo_need_build [HINT]: THPEMU and USEMEM, the thpemu and usemem of $build (default: build/
# beside demo/); a usage error, HINT after it, if they are not there.
demo_need_build() {
	[ -n "$build" ] || build=$(cd "$DEMO_DIR/.." && pwd)/build
	THPEMU=$build/thpemu
	USEMEM=$build/usemem
	[ -x "$THPEMU" ] && [ -x "$USEMEM" ] ||
		die_usage "--build: no thpemu and usemem in '$build'${1:+ $1}"
}

# demo_need CMD [WHY]: exit 1 with one line unless CMD is installed.
demo_need() {
	command -v "$1" >/dev/null || {
		echo "$DEMO_NAME: $1 is needed${2:+ $2} (apt-get install $1)" >&2
		exit 1
	}
}

# demo_make_out: make the directory $out (a usage error if it cannot be made).
demo_make_out() {
	mkdir -p "$out" || die_usage "--out: cannot create '$out'"
}

# demo_out_dir: dir is $out when given (made if need be), else a temporary directory removed at
# exit.
demo_out_dir() {
	if [ -n "$out" ]; then
		demo_make_out
		dir=$out
	else
		dir=$(mktemp -d "/tmp/${DEMO_NAME%.sh}.XXXXXX")
		trap 'rm -rf "$dir"' EXIT
	fi
}

# usemem's own summary counts 2 MiB extents (one timed first touch + memset each), not faults
demo_usemem_explain() { # demo_usemem_explain FILE: usemem's key=value summary, said in words
	sed -n 's/^usemem: extents=\([0-9]*\) huge=\([0-9]*\) huge_pct=\([0-9.]*\) .*p50_us=\([0-9.]*\) p99_us=\([0-9.]*\).*/  usemem, per 2 MiB extent: huge % of 2 MiB extents \3 (\2 of \1); extent touch latency p50 \4 us, p99 \5 us/p' "$1" 2>/dev/null | tail -1
}

# The table: a label DEMO_LABEL_W wide, then a cell DEMO_CELL_W wide per policy.
# demo_cells LABEL CMD...: a row whose cell for policy p is what `CMD... p` prints.
demo_cells() {
	local label=$1 p

	shift
	printf '%-*s' "$DEMO_LABEL_W" "$label"
	for p in "${policies[@]}"; do printf '%*s' "$DEMO_CELL_W" "$("$@" "$p")"; done
	printf '\n'
}

# demo_json FILTER POLICY: jq's FILTER of POLICY's report, or "-".
demo_json() {
	[ -s "$dir/$2.json" ] && jq -r "$1" "$dir/$2.json" 2>/dev/null || echo "-"
}

# demo_row LABEL FILTER: a row of the reports' FILTER.
demo_row() {
	demo_cells "$1" demo_json "$2"
}
