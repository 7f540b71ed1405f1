#!/usr/bin/env bash
# thpemu matrix through Slurm: a one-node Slurm started here, in a temporary
# directory — its own munged (own key and socket) and slurmctld and slurmd on private ports,
# both as root with state, spool, logs and pid files in $T_TMP — runs a 2 policies x 1 workload
# x 2 runs matrix as a job array (thpemu matrix --slurm --wait), and thpemu report merges the
# cells' results: every cell has a result, each says which policy, workload, run and host it
# was, and the merged report compares both policies; then one cell of the fidelity suite
# (tests/perf/fidelity_suite.sh --slurm: a real kernel booted under qemu, and thpemu) runs as an
# array task through the same matrix machinery. The daemons are stopped at exit.
# Packages (Debian 12, .ci/deps): slurmctld slurmd slurm-client munge.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
for c in munged slurmctld slurmd sbatch squeue; do
	command -v "$c" >/dev/null || PATH=$PATH:/usr/sbin
	need_cmd "$c"
done

S=$T_TMP/slurm
stop() { # stop PIDFILE: SIGTERM, and wait until it has gone (before $T_TMP is removed)
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
}
mkdir -p "$S/state" "$S/spool" "$S/munge"
chmod 0700 "$T_TMP" "$S/munge"
HOST=$(hostname -s)

# munge: a key of our own (the system's /etc/munge is not touched) and a private socket
dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$S/munge/munge.key"
munged --force --key-file="$S/munge/munge.key" --socket="$S/munge/munge.socket" \
	--pid-file="$S/munge/munged.pid" --log-file="$S/munge/munged.log" \
	--seed-file="$S/munge/munged.seed" ||
	fail "munged did not start: $(tail -3 "$S/munge/munged.log" 2>/dev/null)"
at_exit "stop '$S/munge/munged.pid'"

# two free TCP ports for slurmctld and slurmd
read -r P1 P2 < <(python3 -c '
import socket
s=[socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1",0))
print(*[x.getsockname()[1] for x in s])')
MEM=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
cat >"$S/slurm.conf" <<EOF
ClusterName=thpemu-test
SlurmctldHost=$HOST
SlurmctldPort=$P1
SlurmdPort=$P2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/munge.socket
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$HOST CPUs=$(nproc) RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
slurmctld -f "$S/slurm.conf" -i || fail "slurmctld did not start: $(tail -3 "$S/slurmctld.log")"
at_exit "stop '$S/slurmctld.pid'"
slurmd -f "$S/slurm.conf" || fail "slurmd did not start: $(tail -3 "$S/slurmd.log")"
at_exit "stop '$S/slurmd.pid'"
for _ in $(seq 100); do
	sinfo -h -o %T 2>/dev/null | grep -qE '^idle' && break
	sleep 0.2
done
sinfo -h -o %T | grep -qE '^idle' ||
	fail "the node is not idle: $(sinfo 2>&1 | tail -2); $(tail -3 "$S/slurmd.log")"
say "one-node Slurm up: $HOST, ports $P1 $P2"

M=$T_TMP/m
export THPEMU_MATRIX_LOCK=$T_TMP/matrix.lock
timeout 80 "$THPEMU" matrix --policy policy=modern-always,pool=64M --policy policy=modern-never,pool=64M \
	--workload "small=$USEMEM --size 8M" --runs 2 --out "$M" --slurm --wait \
	>"$T_OUT/matrix.txt" 2>&1 ||
	fail "matrix --slurm --wait: $(tail -5 "$T_OUT/matrix.txt"); $(cat "$M"/logs/slurm-* 2>/dev/null | tail -5)"
cat "$T_OUT/matrix.txt"
grep -q -- '--array=0-3' "$M/matrix.sbatch" || fail "matrix.sbatch: no --array=0-3"
grep -q "4 of 4 cells have a result" "$T_OUT/matrix.txt" || fail "not every cell has a result"
for i in 0 1 2 3; do
	r=$M/results/000$i.json
	[ -f "$r" ] || fail "cell $i: no result"
	expect_eq "cell $i: its host" "$(json "$r" .matrix.host)" "$(hostname)"
	expect_eq "cell $i: its workload" "$(json "$r" .matrix.workload.name)" small
	expect_eq "cell $i: its run" "$(json "$r" .matrix.run)" $((i / 2 + 1))
	expect_eq "cell $i: its policy" "$(json "$r" .matrix.policy.label)" \
		"$([ $((i % 2)) = 0 ] && echo modern-always || echo modern-never)"
	expect_eq "cell $i: ran that policy (its canonical name)" "$(json "$r" .config.policy)" \
		"$([ $((i % 2)) = 0 ] && echo thp-always/always || echo thp-never/madvise)"
done
ls "$M"/logs/slurm-*_0.out >/dev/null 2>&1 || fail "no Slurm task output: the cells did not run as array tasks"

"$THPEMU" report "$M" >"$T_OUT/report.txt" 2>&1 || fail "report: $(tail -3 "$T_OUT/report.txt")"
"$THPEMU" report "$M"/results/*.json --html "$T_OUT/report.html" >/dev/null 2>&1 ||
	fail "report --html failed"
cat "$T_OUT/report.txt" | head -20
grep -q "matrix $M: 4 of 4 cells have a result" "$T_OUT/report.txt" || fail "report: cells missing"
grep -q "workload small: A = modern-always (2 runs), B = modern-never (2 runs)" \
	"$T_OUT/report.txt" || fail "report: no comparison of both policies"
grep -qE '^Amean +huge-pct' "$T_OUT/report.txt" || fail "report: no huge-pct row"
say "ok: 4 cells as a Slurm array, merged report in $T_OUT/report.txt"

# the fidelity suite's cells through the same array: one cell of the suite (mthp, 6.12, 512 MiB,
# one boot and one run) as a fidelity cell of thpemu matrix, run by a Slurm task; its result is
# the fidelity JSON (one setting of one boot), linked as the suite's cell JSON, and its row
# is that JSON's verdicts
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (qemu-system-x86)"
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
	skip "/bin/busybox is not a static busybox (busybox-static)"
"$THPEMU" oracle --fetch-only --kernel 6.12 >"$T_OUT/fetch.txt" 2>&1 ||
	fail "fetching 6.12: $(tail -1 "$T_OUT/fetch.txt")"
t=$SECONDS
timeout 200 bash "$THPEMU_SOURCE_DIR/tests/perf/fidelity_suite.sh" --slurm --offline --kernels 6.12 \
	--mem 512M --boots 1 --cells mthp --timeout 150s --out "$T_OUT/suite" >"$T_OUT/suite.txt" 2>&1 ||
	fail "the suite through Slurm: exit $?: $(tail -5 "$T_OUT/suite.txt"); $(cat "$T_OUT"/suite/matrix/logs/slurm-* 2>/dev/null | tail -5)"
j=$T_OUT/suite/512M-6.12-mthp.json
expect_eq "suite: the cell's JSON is the matrix's result" "$(readlink "$j")" matrix/results/0000.json
expect_eq "suite: the cell" "$(json "$j" .matrix.fidelity.name)" 512M-6.12-mthp
expect_eq "suite: one setting of one boot" "$(json "$j" '[(.settings | length), (.settings[0].real | length)] | join(" ")')" "1 1"
ls "$T_OUT"/suite/matrix/logs/slurm-*_0.out >/dev/null 2>&1 || fail "suite: the cell did not run as an array task"
v=$(json "$j" '.verdicts | "\(.close) +\(."in range") +\(.OFF) +\(."n/a")"')
grep -qE "^512M-6.12-mthp +$v .* ok$" "$T_OUT/suite.txt" ||
	fail "suite: the cell's row is not its JSON's verdicts ($v): $(cat "$T_OUT/suite.txt")"
say "ok: the suite's cell as a Slurm task in $((SECONDS - t)) s: $(grep '^all ' "$T_OUT/suite.txt")"
