#!/usr/bin/env bash
# PostgreSQL 15 under thpemu run, its shared buffers managed as shared memory (core/live/shmem.c):
# the server's main segment is one MAP_SHARED|MAP_ANONYMOUS mapping every backend inherits from
# the postmaster (src/backend/port/sysv_shmem.c CreateAnonymousSegment, huge_pages=off), beside a
# small SysV segment (unmanaged: live_shmem.sh says why) and dynamic shared memory in /dev/shm
# (dynamic_shared_memory_type=posix). The postmaster runs in the foreground under thpemu run as an
# unprivileged user (PostgreSQL refuses root) given CAP_SYS_PTRACE, which userfaultfd(2) asks of
# a user without vm.unprivileged_userfaultfd (fs/userfaultfd.c userfaultfd_syscall_allowed, 6.12);
# pgbench's clients run natively against its unix socket. Checked: pgbench -i and a TPC-B run with
# 4 clients succeed with no failed or aborted transaction, the balances agree (accounts, tellers,
# branches and the history's deltas) and the history holds every transaction, the server stops
# cleanly (pg_ctl stop -m fast) and thpemu run exits 0 with every process managed, and the report
# shows the buffers managed: first touches of the shared memory, PMD-size file folios under
# shmem-enabled=always, and the census's managed memory at least shared_buffers.
# Size: PG_SCALE (pgbench -i -s) and PG_SECONDS (pgbench -T), 20 and 20, or with
# THPEMU_PERF_QUICK=1 (CI) 5 and 5. The data outgrow shared_buffers (13 MiB of accounts per scale unit
# against PG_BUFFERS, default 32MB) and pg_prewarm reads pgbench_accounts through them, so every buffer is
# touched.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd setpriv
PGBIN=/usr/lib/postgresql/15/bin
for b in initdb postgres pg_ctl pg_isready psql pgbench; do
	[ -x "$PGBIN/$b" ] || skip "$PGBIN/$b missing (Debian packages postgresql-15, postgresql-client-15)"
done
if [ "${THPEMU_PERF_QUICK:-0}" = 1 ]; then # CI (.ci/test)
	: "${PG_SCALE:=5}" "${PG_SECONDS:=5}"
else
	: "${PG_SCALE:=20}" "${PG_SECONDS:=20}"
fi
: "${PG_BUFFERS:=32MB}"
POLICY="thp-always/always:shmem-enabled=always"
PGUID=65534 # nobody
# the server's user, with CAP_SYS_PTRACE for userfaultfd (ambient: kept across exec, and unlike a
# file capability no secure execution, so the preload and THPEMU_* stay in force)
as_pg() { setpriv --reuid=$PGUID --regid=$PGUID --clear-groups "$@"; }
as_pg_uffd=(setpriv --reuid="$PGUID" --regid="$PGUID" --clear-groups --inh-caps=+sys_ptrace
	--ambient-caps=+sys_ptrace) # a command, not a function: $! of it in the background is its pid
as_pg true || skip "cannot switch to uid $PGUID"
"${as_pg_uffd[@]}" true || skip "cannot give uid $PGUID CAP_SYS_PTRACE as an ambient capability"

# a directory of the server's user ($T_TMP is root's, 0700): data, socket, logs, the report
D=$(mktemp -d /tmp/thpemu-pg.XXXXXX)
at_exit "rm -rf '$D'"
chown $PGUID:$PGUID "$D"
chmod 700 "$D"
# a build tree the server's user cannot reach (a clone in root's home): thpemu and its library
# copied where it can (thpemu run preloads the libthpemu.so beside itself)
if ! as_pg test -r "$LIBTHPEMU" -a -x "$THPEMU"; then
	mkdir "$D/bin"
	cp "$THPEMU" "$LIBTHPEMU" "$D/bin/" || fail "copying thpemu for uid $PGUID"
	chown -R $PGUID:$PGUID "$D/bin"
	THPEMU="$D/bin/thpemu"
fi
psql_q() { as_pg "$PGBIN/psql" -X -q -At -h "$D" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"; }

as_pg "$PGBIN/initdb" -D "$D/data" -A trust -U postgres --no-sync >"$T_TMP/initdb.log" 2>&1 ||
	fail "initdb: $(tail -5 "$T_TMP/initdb.log")"
bufbytes=$(numfmt --from=iec "${PG_BUFFERS%B}")

"${as_pg_uffd[@]}" "$THPEMU" run --quiet --require-managed --pool 1G --policy "$POLICY" \
	--report "$D/run.json" -- "$PGBIN/postgres" -D "$D/data" -c listen_addresses= \
	-c unix_socket_directories="$D" -c shared_buffers="$PG_BUFFERS" -c huge_pages=off \
	-c dynamic_shared_memory_type=posix -c fsync=off -c max_connections=20 \
	>"$D/server.log" 2>&1 &
run_pid=$!
# on a failure: the server stopped at once, then thpemu run
at_exit "kill -KILL $run_pid"
at_exit "as_pg '$PGBIN/pg_ctl' -D '$D/data' stop -m immediate -w -t 30"
for _ in $(seq 300); do
	as_pg "$PGBIN/pg_isready" -q -h "$D" -U postgres && break
	kill -0 $run_pid 2>/dev/null || fail "the server ended before accepting connections: $(tail -5 "$D/server.log")"
	sleep 0.2
done
as_pg "$PGBIN/pg_isready" -q -h "$D" -U postgres || fail "not ready after 60 s: $(tail -5 "$D/server.log")"

as_pg "$PGBIN/pgbench" -h "$D" -U postgres -i -s "$PG_SCALE" -q postgres >"$T_TMP/init.log" 2>&1 ||
	fail "pgbench -i: $(tail -5 "$T_TMP/init.log")"
# every shared buffer used: the accounts (PG_SCALE x 13 MiB) read through them
psql_q "CREATE EXTENSION pg_prewarm" || fail "CREATE EXTENSION pg_prewarm"
blocks=$(psql_q "SELECT pg_prewarm('pgbench_accounts')") || fail "pg_prewarm"
[ "$blocks" -gt 0 ] || fail "pg_prewarm read $blocks blocks"

as_pg "$PGBIN/pgbench" -h "$D" -U postgres -c 4 -j 2 -T "$PG_SECONDS" postgres >"$T_OUT/pgbench.txt" 2>&1
rc=$?
cp "$D/server.log" "$T_OUT/" 2>/dev/null
[ $rc = 0 ] || fail "pgbench exit status $rc: $(tail -5 "$T_OUT/pgbench.txt")"
! grep -qi 'abort' "$T_OUT/pgbench.txt" || fail "pgbench: $(grep -i abort "$T_OUT/pgbench.txt")"
grep -q '^number of failed transactions: 0 ' "$T_OUT/pgbench.txt" ||
	fail "failed transactions: $(grep -i failed "$T_OUT/pgbench.txt")"
done_tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$T_OUT/pgbench.txt")
[ "${done_tx:-0}" -gt 0 ] || fail "no transaction processed: $(cat "$T_OUT/pgbench.txt")"
tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$T_OUT/pgbench.txt")

# TPC-B's invariant: each transaction adds one delta to an account, its teller and its branch,
# and writes it to the history
sums=$(psql_q "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers),
	(SELECT sum(bbalance) FROM pgbench_branches), (SELECT coalesce(sum(delta), 0) FROM pgbench_history),
	(SELECT count(*) FROM pgbench_history)") || fail "the balance query"
IFS='|' read -r sa st sb sd nh <<<"$sums"
if [ "$sa" != "$st" ] || [ "$st" != "$sb" ] || [ "$sb" != "$sd" ]; then
	fail "balances disagree: accounts $sa tellers $st branches $sb history $sd"
fi
expect_eq "history rows against transactions processed" "$nh" "$done_tx"
accounts=$(psql_q "SELECT count(*) FROM pgbench_accounts")
expect_eq "accounts" "$accounts" $((PG_SCALE * 100000))

as_pg "$PGBIN/pg_ctl" -D "$D/data" stop -m fast -w -t 120 >"$T_TMP/stop.log" 2>&1 ||
	fail "pg_ctl stop: $(cat "$T_TMP/stop.log")"
wait $run_pid
rc=$?
cp "$D/server.log" "$T_OUT/"
expect_eq "thpemu run exit status (the postmaster's)" "$rc" 0
grep -q 'database system is shut down' "$D/server.log" || fail "no clean shutdown: $(tail -5 "$D/server.log")"
! grep -E 'PANIC|terminated by signal|was terminated|server process .* exited with exit code [^0]' \
	"$D/server.log" || fail "a server process failed (above)"
cp "$D/run.json" "$T_OUT/run.json" || fail "no report"
r() { jq -r "$1" "$T_OUT/run.json"; }

# the shared buffers managed: one MAP_SHARED anonymous object mapped by every backend
[ "$(r .host.shmem_maps)" -ge 1 ] || fail "no shared memory mapping managed"
[ "$(r .host.shmem_faults)" -gt 0 ] || fail "no first touch of shared memory"
[ "$(r .host.shmem_huge)" -gt 0 ] || fail "no PMD-size shmem decision under shmem-enabled=always"
[ "$(r .vmstat.thp_file_alloc)" -gt 0 ] || fail "thp_file_alloc 0 under shmem-enabled=always"
# the pages of the buffers delivered (a huge decision's 512 pages count each)
[ "$(r .host.shmem_pages)" -ge $((bufbytes / 4096)) ] ||
	fail "shmem pages filled $(r .host.shmem_pages) < shared_buffers ($bufbytes bytes)"
[ "$(r .program.unmanaged_processes)" = 0 ] || fail "unmanaged processes: $(r .program.unmanaged)"
# the census: the managed memory at its largest holds the buffers, and they are not in its
# unmanaged shared pile (where the SysV segment's few KiB are)
[ "$(r .memory.unmanaged_by_reason.shared)" -lt 1048576 ] ||
	fail "census: $(r .memory.unmanaged_by_reason.shared) bytes of shared memory unmanaged"
[ "$(r .memory.anon_managed_bytes)" -ge "$bufbytes" ] ||
	fail "census: managed $(r .memory.anon_managed_bytes) bytes < shared_buffers $bufbytes"

"$THPEMU" report "$T_OUT/run.json" >"$T_OUT/report.txt" || fail "thpemu report"
grep -q '^ *shared memory: [1-9][0-9]* first touches: PMD-size folios [1-9]' "$T_OUT/report.txt" ||
	fail "thpemu report: no shared memory line: $(grep -i shared "$T_OUT/report.txt")"
grep -q 'vmstat: thp_file_alloc [1-9]' "$T_OUT/report.txt" || fail "thpemu report: no thp_file line"
grep -q '^ *memory: .* managed' "$T_OUT/report.txt" || fail "thpemu report: no memory census line"
say "scale $PG_SCALE, $PG_SECONDS s: $done_tx transactions, tps $tps; balances $sa"
say "$(grep -E '^ *(memory|shared memory|vmstat: thp_file)' "$T_OUT/report.txt" | sed 's/^ *//' | tr '\n' '|')"
