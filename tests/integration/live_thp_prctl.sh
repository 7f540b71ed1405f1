#!/usr/bin/env bash
# prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED) (Linux 6.18) under the 6.x
# profiles: with transparent_hugepage/enabled=always the process behaves as under "madvise" (only
# its MADV_HUGEPAGE memory gets huge pages), PR_GET_THP_DISABLE answers 3, and a fork child and
# an exec'd image keep the flag (MMF_INIT_MASK). PR_SET_THP_DISABLE without it: no huge page at
# all, answer 1. Natively, the host answers the same PR_GET_THP_DISABLE values (a 6.18 host); the
# 3.x profiles predate the call (3.15) and leave it to the host, as before.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
P="$THPEMU_BUILD_DIR/tests/programs/thp_prctl"

probe() { # MODE POLICY: the program's lines under thpemu
	"$THPEMU" run --quiet --policy "$2" --report "$T_OUT/$1-${2//\//_}.json" -- "$P" "$1" \
		>"$T_TMP/out" 2>"$T_TMP/err" || fail "$1 under $2: $(tail -3 "$T_TMP/err")"
	cat "$T_TMP/out"
}
line() { grep "^$1" <<<"$2" | sed "s/^$1 //"; }

for mode in except full none; do
	native=$("$P" "$mode") || fail "$mode natively"
	emu=$(probe "$mode" thp-always/madvise)
	for what in "set" "child get" "exec get"; do
		expect_eq "$mode: $what, native against emulated" "$(line "$what" "$emu")" \
			"$(line "$what" "$native")"
	done
	case $mode in
	except) want="0 get 3|3|3|plain_huge 0 advised_huge 4" ;;
	full) want="0 get 1|1|1|plain_huge 0 advised_huge 0" ;;
	none) want="0 get 0|0|0|plain_huge 4 advised_huge 4" ;;
	esac
	got="$(line set "$emu")|$(line "child get" "$emu")|$(line "exec get" "$emu")|$(grep ^plain_huge <<<"$emu")"
	expect_eq "$mode under thp-always/madvise" "$got" "$want"
	say "$mode: $(tr '\n' ';' <<<"$emu")"
done

# thp-madvise/*: the flag gives nothing more than the system's own madvise mode
emu=$(probe except thp-madvise/madvise)
expect_eq "except under thp-madvise/madvise" "$(grep ^plain_huge <<<"$emu")" \
	"plain_huge 0 advised_huge 4"

# 3.x: the emulated kernel predates the call; the host takes it (its answer stands) and says so
emu=$(probe except linux-3.2)
expect_eq "except under linux-3.2" "$(grep ^plain_huge <<<"$emu")" "plain_huge 4 advised_huge 4"
jq -r '[.. | .note? // empty] | join(" ")' "$T_OUT/except-linux-3.2.json" |
	grep -q 'PR_SET_THP_DISABLE ignored' || fail "3.x: no note that the call predates the profile"
say "linux-3.2: $(tr '\n' ';' <<<"$emu")"
