#!/usr/bin/env bash
# One machine per `thpemu run`: every process of the program tree - exec'd children, fork
# children - faults against one pool (core/machine, core/host/host.c).
#   1. a forking server (fork without exec): the workers are managed, output as natively;
#   2. one pool: three workers each holding 40 MiB of a 64 MiB machine exhaust it, which no
#      worker alone would (with a pool per process none would);
#   3. Python multiprocessing (fork start method): the pool's workers are managed;
#   4. SIGKILL of a worker in the middle of faulting on a fragmented pool (compaction): the
#      others finish with their data intact, and once everyone is gone the machine has every
#      frame back and its model checks out.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd python3
PROG="$THPEMU_BUILD_DIR/tests/programs/forkserver"

# 1. a forking server
want=$("$PROG" 3 16) || fail "forkserver failed natively"
rep="$T_OUT/server.json"
got=$("$THPEMU" run --quiet --pool 256M --report "$rep" -- "$PROG" 3 16) ||
	fail "forkserver failed under thpemu: $got"
# workers finish in any order; natively they say managed=0
expect_eq "forkserver output" "$(sed 's/ managed=.//' <<<"$got" | sort)" \
	"$(sed 's/ managed=.//' <<<"$want" | sort)"
expect_eq "workers managed" "$(grep -c 'managed=1' <<<"$got")" 3
expect_eq "processes" "$(json "$rep" .program.processes)" 4
expect_eq "one machine" "$(json "$rep" .program.machine.shared)" true
expect_eq "machine check" "$(json "$rep" .program.machine.check)" ok
expect_eq "uffd errors" "$(json "$rep" .host.uffd_errors)" 0
inherited=$(json "$rep" .host.fork_inherited_pages)
[ "$inherited" -ge $((3 * 2048)) ] || fail "fork children inherited only $inherited pages"
say "forking server: 4 processes on one machine, $(json "$rep" .faults.total) faults"

# 2. one pool for all: 3 x 40 MiB held at once on a 64 MiB machine
rep="$T_OUT/onepool.json"
"$THPEMU" run --quiet --pool 64M --policy modern-never --report "$rep" -- "$PROG" 3 40 \
	>"$T_TMP/onepool.out" || fail "forkserver 3 40 failed: $(cat "$T_TMP/onepool.out")"
nomem=$(json "$rep" .host.nomem_faults)
[ "$nomem" -gt 0 ] || fail "120 MiB in use on a 64 MiB machine, yet no fault found the pool empty"
"$THPEMU" run --quiet --pool 64M --policy modern-never --report "$T_OUT/alone.json" -- \
	"$PROG" 1 40 >/dev/null || fail "forkserver 1 40 failed"
expect_eq "one worker alone exhausts nothing" "$(json "$T_OUT/alone.json" .host.nomem_faults)" 0
say "one pool: $nomem faults served outside the exhausted 64 MiB machine"

# 3. Python multiprocessing with the fork start method
py='
import multiprocessing as mp
def work(i):
    b = bytearray(8 << 20)
    for j in range(0, len(b), 4096):
        b[j] = (i + j // 4096) % 251
    return sum(b[j] for j in range(0, len(b), 4096))
if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as p:
        print(p.map(work, range(4)))'
want=$(python3 -c "$py") || fail "python natively"
rep="$T_OUT/mp.json"
got=$("$THPEMU" run --quiet --report "$rep" -- python3 -c "$py") || fail "python under thpemu"
expect_eq "multiprocessing output" "$got" "$want"
n=$(json "$rep" .program.processes)
[ "$n" -ge 3 ] || fail "python multiprocessing: only $n managed processes (parent + 2 workers)"
expect_eq "machine check (python)" "$(json "$rep" .program.machine.check)" ok
say "python multiprocessing: $n processes on one machine"

# 4. SIGKILL in the middle of faulting and compaction
rep="$T_OUT/kill.json"
"$THPEMU" run --quiet --pool 256M --policy linux-3.3 --fragment thpcompact --report "$rep" -- \
	"$PROG" 3 24 --kill-one >"$T_TMP/kill.out" 2>&1 ||
	fail "survivors failed after a SIGKILL: $(cat "$T_TMP/kill.out")"
grep -q "server: 3 workers, table ok" "$T_TMP/kill.out" || fail "server did not finish ok"
expect_eq "survivors" "$(grep -c '^worker .* ok' "$T_TMP/kill.out")" 2
expect_eq "machine check after a kill" "$(json "$rep" .program.machine.check)" ok
expect_eq "program frames left after everyone is gone" "$(json "$rep" .host.pool.anon)" 0
[ "$(json "$rep" .program.machine.processes_reaped)" -ge 4 ] || fail "dead processes not reaped"
say "SIGKILL: survivors intact, $(json "$rep" .program.machine.frames_returned) frames returned," \
	"$(json "$rep" .vmstat.compact_stall) compaction stalls"
