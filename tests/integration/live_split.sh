#!/usr/bin/env bash
# THPs split over time, live (tests/integration/programs/thp_split.c):
#  (a) a partial munmap of a THP: 6.12 (modern-always) splits the PMD and queues the THP, and
#      the THP shrinker splits it under memory pressure; 3.2 splits it at once, never deferred;
#  (b) 6.12's underused split: with max_ptes_none 450, THPs holding ~43 non-zero pages are
#      split by the shrinker under pressure and their zero pages really unmapped (mincore), the
#      data written intact (also pages written while the split runs); with 511, never.
# The pressure: a 64M pool, ~60 MiB more touched. The pool also holds dirty page cache
# (--fragment dirty:30%), which direct reclaim cannot take: reclaim then goes down its
# priorities, and the shrinker (shrink_slab at each priority) scans the split queue. With no
# page cache at all, core/mm's reclaim stops at the first priority (nothing on the LRU), where
# a queue of a few THPs is never scanned (delta = freeable >> 12).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/thp_split"
[ -x "$PROG" ] || fail "$PROG not built"

# run NAME POLICY FRAGMENT ARGS...: the program under thpemu run, report in $T_OUT/NAME.json
run() {
	local name=$1 policy=$2 frag=$3
	shift 3
	local frag_opt=()
	[ -n "$frag" ] && frag_opt=(--fragment "$frag")
	"$THPEMU" run --policy "$policy" --pool 64M "${frag_opt[@]}" --quiet \
		--report "$T_OUT/$name.json" -- "$PROG" "$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err" ||
		{
			cat "$T_TMP/$name.out" "$T_TMP/$name.err" >&2
			fail "$name: the program failed (its data was not intact?)"
		}
	cat "$T_TMP/$name.out"
}
vm() { json "$T_OUT/$1.json" ".vmstat.$2"; }
host() { json "$T_OUT/$1.json" ".host.$2"; }
field() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$T_TMP/$1.out"; }
ge() { [ "$2" -ge "$3" ] || fail "$1: $2 < $3"; }

# (a) partial munmap: deferred split under pressure (6.12), immediate split (3.2)
run partial.modern modern-always dirty:30% partial 60
ge "modern-always thp_split_pmd" "$(vm partial.modern thp_split_pmd)" 1
ge "modern-always thp_deferred_split_page" "$(vm partial.modern thp_deferred_split_page)" 1
ge "modern-always thp_split_page (the shrinker)" "$(vm partial.modern thp_split_page)" 1
say "modern-always: split_pmd=$(vm partial.modern thp_split_pmd)" \
	"deferred=$(vm partial.modern thp_deferred_split_page)" \
	"split_page=$(vm partial.modern thp_split_page)"

run partial.32 linux-3.2 dirty:30% partial 60
ge "linux-3.2 thp_split_page" "$(vm partial.32 thp_split_page)" 1
expect_eq "linux-3.2 thp_deferred_split_page" "$(vm partial.32 thp_deferred_split_page)" 0
say "linux-3.2: split_page=$(vm partial.32 thp_split_page) deferred=0"

# (b) underused THPs: 4 of them, 43 pages in 512 written, 8 more written during the pressure
run under.450 modern-always:max-ptes-none=450 dirty:30% underused 4 60 wait
ge "max-ptes-none=450 thp_underused_split_page" "$(vm under.450 thp_underused_split_page)" 1
n=$(host under.450 underused_splits)
ge "max-ptes-none=450 host.underused_splits" "$n" 1
expect_eq "host.underused_splits vs vmstat" "$n" "$(vm under.450 thp_underused_split_page)"
freed=$(host under.450 underused_pages_freed)
ge "host.underused_pages_freed" "$freed" $((n * 451))
expect_eq "uffd errors" "$(host under.450 uffd_errors)" 0
pages=$(field under.450 pages)
before=$(field under.450 resident_before)
after=$(field under.450 resident_after)
expect_eq "resident before the pressure" "$before" "$pages"
# the zero pages of (at least) one of its THPs are really gone from the program's page tables
[ "$after" -le $((pages - 451)) ] || fail "resident_after=$after of $pages: no THP lost its zero pages"
say "max-ptes-none=450: $n underused splits, $freed zero pages freed, resident $before -> $after"

run under.511 modern-always:max-ptes-none=511 dirty:30% underused 4 60
expect_eq "max-ptes-none=511 thp_underused_split_page" \
	"$(vm under.511 thp_underused_split_page)" 0
expect_eq "max-ptes-none=511 host.underused_splits" "$(host under.511 underused_splits)" 0
expect_eq "max-ptes-none=511 resident" "$(field under.511 resident_after)" "$(field under.511 pages)"
say "max-ptes-none=511: no underused split, all $(field under.511 pages) pages resident"

# (c) the THPs of one process, the pressure from another of the same machine: the reclaim
#     that finds them (the other process's, or the host's kswapd) asks their owner to split
#     them (MACHINE_REQ_SPLIT), whose agent does it for real
ready="$T_TMP/ready"
"$THPEMU" run --policy modern-always:max-ptes-none=450 --pool 64M --fragment dirty:30% --quiet \
	--report "$T_OUT/cross.json" -- /bin/sh -c \
	"'$PROG' hold 4 '$ready' 10 & pid=\$!
	 i=0; while [ ! -e '$ready' ] && [ \$i -lt 500 ]; do sleep 0.02; i=\$((i + 1)); done
	 '$PROG' pressure 60 || exit 3
	 wait \$pid" >"$T_TMP/cross.out" 2>"$T_TMP/cross.err" || {
	cat "$T_TMP/cross.out" "$T_TMP/cross.err" >&2
	fail "cross-process: a program failed (the held THPs' data was not intact?)"
}
cat "$T_TMP/cross.out"
ge "cross-process thp_underused_split_page" "$(vm cross thp_underused_split_page)" 1
ge "cross-process host.underused_splits" "$(host cross underused_splits)" 1
pages=$(field cross pages)
after=$(field cross resident_after)
[ "$after" -lt "$pages" ] || fail "cross-process: the held THPs kept all $pages pages resident"
say "cross-process: $(host cross underused_splits) underused splits by the owner," \
	"resident $pages -> $after"
