#!/usr/bin/env bash
# Soak: checksummed writers, churn (DONTNEED, partial munmap), mremap (grow/move, shrink, move
# a part), huge faults that make compaction migrate everybody's pages, and children forked
# throughout (plain, exec'd, dropping root) that verify every writer page: 0 corrupted bytes.
# CI runs THPEMU_SOAK_GB (default 1) under two migrating profiles; by hand:
#   THPEMU_SOAK_GB=10 ctest -R guard_soak
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/soak"
gb=${THPEMU_SOAK_GB:-1}

# Whether a run's compactions migrate depends on how its threads interleave with the faults
# (one CI run of modern-always in about a dozen migrated nothing): a run that migrated nothing
# is not a soak, so it runs again, up to three times; every run is checked for corruption.
for policy in linux-3.1 modern-always; do
	for try in 1 2 3; do
		"$THPEMU" run --quiet --policy $policy --pool 256M --fragment thpcompact \
			--report "$T_OUT/$policy.json" -- "$PROG" "$gb" 4 2 8 >"$T_TMP/out" 2>&1 ||
			fail "$policy: $(cat "$T_TMP/out")"
		grep -q ' child_bad_bytes=0 corrupted_bytes=0$' "$T_TMP/out" || fail "$policy: $(cat "$T_TMP/out")"
		expect_eq "$policy: uffd errors" "$(json "$T_OUT/$policy.json" .host.uffd_errors)" 0
		migrated=$(json "$T_OUT/$policy.json" .host.anon_migrations)
		[ "$migrated" -gt 0 ] && break
	done
	[ "$migrated" -gt 0 ] || fail "$policy: nothing was migrated in $try runs: not a soak"
	say "$policy: $(cat "$T_TMP/out"); $migrated migrations," \
		"$(json "$T_OUT/$policy.json" .program.wall_s) s (run $try)"
done
