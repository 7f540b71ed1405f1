#!/usr/bin/env bash
# fork (the child joins the run's machine and sees the parent's data, its record named like its
# parent's), vfork+exec and posix_spawn (the new programs manage their own memory) under the
# emulator, and a shell pipeline's fork children (echo | sha1sum: output as natively).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/forker"
rep="$T_OUT/forker.json"

"$THPEMU" run --quiet --report "$rep" -- "$PROG" >"$T_TMP/out" 2>&1 ||
	fail "forker failed: $(cat "$T_TMP/out")"
cat "$T_TMP/out"
for want in "parent: managed=1" "fork: ok" "vfork+exec: ok" "posix_spawn: ok" "parent: data intact"; do
	grep -qx "$want" "$T_TMP/out" || fail "missing '$want'"
done
expect_eq "spawned children managed" "$(grep -c 'spawned: ok managed=1' "$T_TMP/out")" 2
expect_eq "managed processes (the fork child too: one machine)" "$(json "$rep" .program.processes)" 4
expect_eq "uffd errors" "$(json "$rep" .host.uffd_errors)" 0
# the fork child's record is named like its parent (the same image: comm and command line)
expect_eq "records named like the parent (it and its fork child)" \
	"$(jq '[.processes[] | select(.comm == "forker" and (.cmdline | endswith("--child") | not))] | length' "$rep")" 2

# a shell pipeline: per iteration two fork children of bash, one exiting (echo), one exec'ing
# (sha1sum); the output is the same as natively and every process is one of the machine
# shellcheck disable=SC2016 # the loop is bash -c's to expand
loop='for i in $(seq 20); do echo $i | sha1sum; done'
want=$(bash -c "$loop")
got=$("$THPEMU" run --quiet --report "$T_OUT/pipe.json" -- bash -c "$loop") ||
	fail "the pipeline failed under thpemu run"
expect_eq "20 x echo | sha1sum" "$got" "$want"
n=$(json "$T_OUT/pipe.json" .program.processes)
[ "$n" -ge 41 ] || fail "pipeline: $n processes on the machine (bash and 2 a line: 41 at least)"
expect_eq "uffd errors (pipeline)" "$(json "$T_OUT/pipe.json" .host.uffd_errors)" 0
