#!/usr/bin/env bash
# A program that locks its memory (mlockall(MCL_CURRENT | MCL_FUTURE)) and keeps working under a
# fragmented pool: the lock takes a moment, not minutes (the kernel populates the emulator's own
# registered pages too, and each used to be answered with a wake-up until it was given up on),
# its pages are still migrated afterwards, MADV_DONTNEED of a locked page fails as natively, and
# every page keeps its data.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/locked"

"$PROG" >"$T_TMP/native" || fail "native run failed: $(cat "$T_TMP/native")"
for policy in linux-3.1 modern-always; do
	rep="$T_OUT/locked.$policy.json"
	timeout -s KILL 300 "$THPEMU" run --quiet --policy $policy --pool 96M --fragment thpcompact \
		--report "$rep" -- "$PROG" >"$T_TMP/$policy"
	rc=$?
	[ $rc = 137 ] && fail "$policy: still running after 300 s"
	expect_eq "$policy: exit status" $rc 0
	expect_eq "$policy: what the program saw" "$(cut -d' ' -f2- "$T_TMP/$policy")" \
		"$(cut -d' ' -f2- "$T_TMP/native")"
	ms=$(sed 's/^mlockall_ms=\([0-9]*\) .*/\1/' "$T_TMP/$policy")
	[ "$ms" -lt 30000 ] || fail "$policy: mlockall took $ms ms"
	mig=$(json "$rep" .host.anon_migrations)
	[ "$mig" -gt 0 ] || fail "$policy: no page migrated after mlockall (busy: $(json "$rep" .host.anon_migrate_busy))"
	[ "$(json "$rep" .host.own_populated)" -gt 0 ] ||
		fail "$policy: mlockall populated none of the emulator's own pages?"
	expect_eq "$policy: orphan pages" "$(json "$rep" .host.orphan_pages)" 0
	expect_eq "$policy: uffd errors" "$(json "$rep" .host.uffd_errors)" 0
	say "$policy: $(cat "$T_TMP/$policy"), $mig migrations after the lock"
done
