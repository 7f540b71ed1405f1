#!/usr/bin/env bash
# A multi-threaded C program (malloc/realloc/free through jemalloc, its own mmaps, MADV_DONTNEED,
# munmap) prints the same checksums natively and under the emulator, for 4 KiB and huge policies
# and a 3.1-era one.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/mt_checksum"

"$PROG" 4 64 >"$T_TMP/native" || fail "native run failed"
for policy in modern-never modern-always linux-3.1; do
	rep="$T_OUT/mt_checksum.$policy.json"
	"$THPEMU" run --quiet --policy "$policy" --report "$rep" -- "$PROG" 4 64 >"$T_TMP/$policy" ||
		fail "$policy: emulated run failed or found corrupted data"
	cmp -s "$T_TMP/native" "$T_TMP/$policy" || fail "$policy: checksums differ from the native run"
	faults=$(json "$rep" .faults.total)
	[ "$faults" -ge 1000 ] || fail "$policy: only $faults managed faults"
	expect_eq "$policy uffd errors" "$(json "$rep" .host.uffd_errors)" 0
	say "$policy: identical checksums, $faults faults, $(json "$rep" .host.pages_freed) pages freed"
done

# The emulator's threads are made on demand (core/live/README.md, "Processes"): a single-threaded
# process of the run (bash, started by its first process, sh) has one handler and the background
# thread, no watchdog, no refill thread; a program whose threads fault at once gets more handlers.
"$THPEMU" run --quiet -- sh -c 'bash -c "cat /proc/\$\$/task/*/comm; true"; true' >"$T_TMP/comm1" ||
	fail "listing a managed bash's threads failed"
expect_eq "handlers of a single-threaded process" "$(grep -c '^thpemu-flt' "$T_TMP/comm1")" 1
expect_eq "its background thread" "$(grep -c '^thpemu-kthread$' "$T_TMP/comm1")" 1
expect_eq "its watchdog and refill threads" "$(grep -c -e '^thpemu-stallwd$' -e '^thpemu-refill$' "$T_TMP/comm1")" 0
"$THPEMU" run --quiet --handlers 4 -- sh -c '"$1" 4 200 >/dev/null & p=$!; m=0
	while kill -0 $p 2>/dev/null; do
		n=$(cat /proc/$p/task/*/comm 2>/dev/null | grep -c "^thpemu-flt")
		[ "$n" -gt "$m" ] && m=$n; sleep 0.05
	done; wait $p && echo "$m"' sh "$PROG" >"$T_TMP/most" || fail "mt_checksum failed"
most=$(cat "$T_TMP/most")
[ "$most" -ge 2 ] && [ "$most" -le 4 ] || fail "4 faulting threads had $most handlers at most (2..4 expected)"
say "handlers made on demand: 1 for bash, up to $most for 4 faulting threads (--handlers 4)"
