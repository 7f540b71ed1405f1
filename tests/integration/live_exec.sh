#!/usr/bin/env bash
# A shell pipeline: every exec'd process runs its own emulator and pool; `thpemu run` merges
# their statistics into one report.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd python3
rep="$T_OUT/exec.json"

script='python3 -c "print(\"\\n\".join(str(i * 7919 % 100003) for i in range(200000)))" | sort -n | gzip -n | gzip -dc | tail -1'
want=$(sh -c "$script")
got=$("$THPEMU" run --quiet --report "$rep" -- sh -c "$script") || fail "pipeline failed"
expect_eq "pipeline output" "$got" "$want"
n=$(json "$rep" .program.processes)
[ "$n" -ge 5 ] || fail "only $n managed processes (sh, python3, sort, gzip, gzip, tail expected)"
say "$n processes merged, $(json "$rep" .faults.total) faults"
