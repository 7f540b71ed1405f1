# Shared helpers of the shell benchmarks in tests/perf. Source it after
# tests/integration/lib.sh: . "$THPEMU_SOURCE_DIR/tests/perf/perf_lib.sh"
#
# Every benchmark prints its own tables. A benchmark that tests/perf/all.sh runs also records
# its headline figures with perf_row, one tab-separated line each in $THPEMU_PERF_ROWS (when
# set): measure, thpemu, floor or native, ratio, goal, met (yes / no / -). all.sh prints them as
# one table.

# ratio A B: A / B, 2 decimals ("n/a" when B is not positive)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# median < numbers, one a line (0 when none)
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'; }
# ms MICROSECONDS: milliseconds, 2 decimals; diff_ms A B: (A - B) in ms, signed
ms() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; }
diff_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f", (a - b) / 1000 }'; }
# us CMD...: wall time of one run in microseconds (bash's EPOCHREALTIME: no process to time it);
# the command's output is discarded unless US_OUT names a file to append it to
us() {
	local t0=${EPOCHREALTIME/./} rc
	"$@" >>"${US_OUT:-/dev/null}" 2>/dev/null
	rc=$?
	echo $((${EPOCHREALTIME/./} - t0))
	return $rc
}
# at_most VALUE LIMIT: "yes" if VALUE <= LIMIT, "no" if not, "-" if VALUE is not a number
at_most() {
	awk -v v="$1" -v l="$2" 'BEGIN { if (v !~ /^[-+]?[0-9.]+$/) print "-"; else if (v + 0 <= l + 0) print "yes"; else print "no" }'
}
# perf_row MEASURE THPEMU FLOOR RATIO GOAL MET: one row of all.sh's table (no-op unless
# THPEMU_PERF_ROWS is set)
perf_row() {
	[ -n "${THPEMU_PERF_ROWS:-}" ] || return 0
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$THPEMU_PERF_ROWS"
}
# perf_ratio_row MEASURE THPEMU FLOOR LIMIT: a row whose goal is THPEMU / FLOOR <= LIMIT
perf_ratio_row() {
	local r
	r=$(ratio "$2" "$3")
	perf_row "$1" "$2" "$3" "$r" "<= ${4}x" "$(at_most "$r" "$4")"
}
# perf_plus_row MEASURE THPEMU_US FLOOR_US LIMIT_MS: times in us, goal THPEMU - FLOOR <= LIMIT ms
perf_plus_row() {
	local d
	d=$(diff_ms "$2" "$3")
	perf_row "$1" "$2" "$3" "x$(ratio "$2" "$3") ${d}ms" "<= +${4} ms" "$(at_most "$d" "$4")"
}
# perf_host_thp: the host's THP settings, for the docs of a host-THP floor
perf_host_thp() {
	local d=/sys/kernel/mm/transparent_hugepage
	echo "enabled $(sed 's/.*\[\(.*\)\].*/\1/' "$d/enabled" 2>/dev/null) defrag $(sed 's/.*\[\(.*\)\].*/\1/' "$d/defrag" 2>/dev/null)"
}
# vmstat KEY: a /proc/vmstat counter (0 if absent)
vmstat() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' /proc/vmstat; }
