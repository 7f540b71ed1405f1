#!/usr/bin/env bash
# Writers keep checksummed pages while compaction migrates them (small fragmented pool, a
# compacting policy) and other threads MADV_DONTNEED and munmap: zero corrupted bytes, and the
# report shows real page migrations.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/stress_migrate"
secs=${THPEMU_STRESS_SECONDS:-8}

rep="$T_OUT/stress.linux-3.1.json"
"$THPEMU" run --policy linux-3.1 --pool 96M --fragment thpcompact --seed 3 --report "$rep" -- \
	"$PROG" "$secs" 4 2 6 >"$T_TMP/out" || fail "corruption or failure: $(cat "$T_TMP/out")"
cat "$T_TMP/out"
grep -q "corrupted_bytes=0" "$T_TMP/out" || fail "corrupted bytes: $(cat "$T_TMP/out")"
mig=$(json "$rep" .host.anon_migrations)
[ "$mig" -gt 0 ] || fail "no program page was migrated (anon_migrations=$mig)"
expect_eq "uffd errors" "$(json "$rep" .host.uffd_errors)" 0
say "linux-3.1, fragmented 96M pool: $mig real migrations, $(json "$rep" .host.migrating_waits) faults waited on one, $(json "$rep" .vmstat.compact_stall) compaction stalls"

rep="$T_OUT/stress.modern-always.json"
"$THPEMU" run --policy modern-always --pool 96M --fragment thpcompact --report "$rep" -- \
	"$PROG" 4 4 2 6 >"$T_TMP/out2" || fail "modern-always: $(cat "$T_TMP/out2")"
grep -q "corrupted_bytes=0" "$T_TMP/out2" || fail "modern-always corrupted: $(cat "$T_TMP/out2")"
say "modern-always: $(cat "$T_TMP/out2"), $(json "$rep" .host.anon_migrations) migrations"
