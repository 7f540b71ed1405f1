#!/usr/bin/env bash
# A program that locks its memory (mlockall(MCL_CURRENT | MCL_FUTURE)) and keeps working in a
# pool where its THPs need compaction: the lock takes a moment, not minutes (the kernel
# populates the emulator's own registered pages too, and each used to be answered with a wake-up
# until it was given up on), its pages are still migrated afterwards, MADV_DONTNEED of a locked page fails as natively, and
# every page keeps its data.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/locked"

"$PROG" >"$T_TMP/native" || fail "native run failed: $(cat "$T_TMP/native")"
# The pool: 56 MiB, nothing else in it. The program's 32 MiB of locked pages leave 24 MiB of
# free blocks (12 THPs) and its holes 16 MiB more; its 16 new THPs need the holes, so compaction
# must move the program's own locked pages. (In a pool fragmented with foreign pages, compaction
# could make its blocks from those alone: under modern-always it moved none of the program's in
# 8 of 12 runs of a 96 MiB thpcompact-fragmented pool, which the pool could not hold either.)
for policy in linux-3.1 modern-always; do
	rep="$T_OUT/locked.$policy.json"
	timeout -s KILL 300 "$THPEMU" run --quiet --policy $policy --pool 56M \
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
	expect_eq "$policy: faults outside the pool" "$(json "$rep" .host.nomem_faults)" 0
	expect_eq "$policy: uffd errors" "$(json "$rep" .host.uffd_errors)" 0
	say "$policy: $(cat "$T_TMP/$policy"), $mig migrations after the lock"
done
