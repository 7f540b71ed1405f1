#!/usr/bin/env bash
# A shell pipeline: every exec'd process runs its own emulator and pool; `thpemu run` merges
# their statistics into one report and lists each process (pid, ppid, name, faults, latency,
# stalls; a pid that exec'd is one process), in the JSON, on stderr and in `thpemu report`.
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
# one entry per process, their faults adding up to the total
expect_eq "processes listed" "$(json "$rep" '.processes | length')" \
	"$(json "$rep" '.program.processes + .program.unmanaged_processes')"
expect_eq "faults of the processes" "$(json "$rep" '[.processes[].faults.total] | add')" \
	"$(json "$rep" .faults.total)"
for c in python3 sort tail; do
	[ "$(json "$rep" "[.processes[] | select(.comm == \"$c\")] | length")" = 1 ] ||
		fail "no process entry for $c: $(json "$rep" '[.processes[].comm]')"
done

# sh runs usemem (a fork, then an exec), then execs into a second usemem: two processes, the
# second one's sh merged into it
rep="$T_OUT/exec_usemem.json"
"$THPEMU" run --policy modern-always --pool 256M --stall-threshold 10us --report "$rep" -- \
	sh -c "\"$USEMEM\" --size 8M --quiet; exec \"$USEMEM\" --size 16M --quiet" \
	>"$T_TMP/out" 2>"$T_TMP/err" || fail "sh + usemem failed: $(cat "$T_TMP/err")"
jq -c '.processes[] | {pid, ppid, comm, state, exec_from, faults, latency_us, stalls}' "$rep"
expect_eq "managed processes" "$(json "$rep" .program.processes)" 2
expect_eq "process entries" "$(json "$rep" '.processes | length')" 2
expect_eq "faults of the processes" "$(json "$rep" '[.processes[].faults.total] | add')" \
	"$(json "$rep" .faults.total)"
expect_eq "names" "$(json "$rep" '[.processes[].comm] | join(",")')" usemem,usemem
expect_eq "states" "$(json "$rep" '[.processes[].state] | join(",")')" exited,exited
top=$(json "$rep" '.processes[] | select(.exec_predecessors == 1) | .pid')
[ -n "$top" ] || fail "no process says it exec'd from sh"
expect_eq "exec'd from" "$(json "$rep" ".processes[] | select(.pid == $top) | .exec_from")" sh
expect_eq "its command" "$(json "$rep" ".processes[] | select(.pid == $top) | .cmdline")" \
	"$USEMEM --size 16M --quiet"
# the same after the run has had a second process for longer than the host's keeper takes to make
# every statistics record ahead (core/host/host.c: spares_top_up): the exec'd program finds sh's
# record under its pid, keeps it as its predecessor's and claims one made ahead
rep2="$T_OUT/exec_spare.json"
"$THPEMU" run --policy modern-always --pool 256M --report "$rep2" -- \
	sh -c "sleep 0.6; exec \"$USEMEM\" --size 8M --quiet" >"$T_TMP/out2" 2>"$T_TMP/err2" ||
	fail "sh + sleep + usemem failed: $(cat "$T_TMP/err2")"
top2=$(json "$rep2" '.processes[] | select(.comm == "usemem") | .pid')
expect_eq "after a keeper's spares: exec'd from" \
	"$(json "$rep2" ".processes[] | select(.pid == $top2) | \"\\(.exec_predecessors) \\(.exec_from)\"")" "1 sh"
expect_eq "after a keeper's spares: its command" \
	"$(json "$rep2" ".processes[] | select(.pid == $top2) | .cmdline")" "$USEMEM --size 8M --quiet"
[ "$(json "$rep2" ".processes[] | select(.pid == $top2) | .faults.huge")" -ge 4 ] ||
	fail "after a keeper's spares: the 8M usemem took fewer than 4 huge faults"
child=$(json "$rep" ".processes[] | select(.pid != $top)")
expect_eq "the child's parent" "$(jq -r .ppid <<<"$child")" "$top"
expect_eq "the child's predecessors" "$(jq -r .exec_predecessors <<<"$child")" 0
expect_eq "the child's command" "$(jq -r .cmdline <<<"$child")" "$USEMEM --size 8M --quiet"
[ "$(json "$rep" ".processes[] | select(.pid == $top) | .ppid")" != "$top" ] ||
	fail "the first process is its own parent"
# 2 MiB extents under modern-always: 8 of 16M, 4 of 8M at least (sh's faults are base ones)
[ "$(json "$rep" ".processes[] | select(.pid == $top) | .faults.huge")" -ge 8 ] ||
	fail "the 16M usemem took fewer than 8 huge faults"
[ "$(jq -r .faults.huge <<<"$child")" -ge 4 ] || fail "the 8M usemem took fewer than 4 huge faults"
jq -e '.processes[] | .latency_us.max >= .latency_us.p99 and .latency_us.p99 >= .latency_us.p50
	and .latency_us.p50 > 0' "$rep" >/dev/null || fail "implausible per-process latencies"
# every stall group names a listed process; the handlers' per-process counts add up
[ "$(json "$rep" '.stalls.groups | length')" -ge 1 ] || fail "no stall over 10us"
jq -e '[.processes[].pid] as $p | all(.stalls.groups[]; (.pid as $g | $p | index($g)) != null
	and .process == "usemem")' "$rep" >/dev/null || fail "a stall group names no listed process"
expect_eq "stalls of the processes" "$(json "$rep" '[.processes[].stalls.count] | add')" \
	"$(json "$rep" .host.stalls)"
# the table on stderr and in `thpemu report`
grep -q '^thpemu: processes, busiest first:$' "$T_TMP/err" || fail "no process table on stderr"
expect_eq "stderr rows" "$(grep -Ec "^thpemu: +[0-9]+ +[0-9]+ usemem +exited " "$T_TMP/err")" 2
grep -q "^# process $top (usemem)$" "$T_TMP/err" || fail "the stall report does not name $top"
"$THPEMU" report "$rep" >"$T_TMP/text" || fail "thpemu report failed"
expect_eq "report rows" "$(grep -Ec "^ +($top|$(jq -r .pid <<<"$child")) .* usemem +exited " \
	"$T_TMP/text")" 2
# a process left running when the program ends is said to be running, not to have crashed
rep="$T_OUT/exec_running.json"
"$THPEMU" run --quiet --report "$rep" -- \
	sh -c "\"$USEMEM\" --size 4M --hold 5s --quiet >/dev/null & sleep 1; exit 0" ||
	fail "sh with a background usemem failed"
expect_eq "the background usemem" \
	"$(json "$rep" '[.processes[] | select(.comm == "usemem") | .state] | join(",")')" running
say "sh + 2 usemem: 2 processes, $(json "$rep" .faults.total) faults, pid $top exec'd from sh"
