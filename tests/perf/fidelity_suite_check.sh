#!/usr/bin/env bash
# tests/perf/fidelity_suite.sh, the whole fidelity suite's command, on something small:
#   its options       every bad value refused in one line naming the option, exit 2, before
#                     any work (no --out directory made); --list and --dry-run
#   its totals        --tally of kept JSONs (made up here): per cell the JSON's verdicts, the
#                     total their sums, the share inside the goal (close + in range) of all
#   a tiny run        one cell (mthp, 6.12, 512 MiB, one boot and one run): exit 0, its JSON
#                     kept, its row the JSON's verdicts, the total the same row
. "$(dirname "$0")/../integration/lib.sh"
need_cmd jq
S=$THPEMU_SOURCE_DIR/tests/perf/fidelity_suite.sh
cd "$T_TMP" || fail "cd $T_TMP"

# row NAME: the row of cell NAME (or all) in $out
row() { printf '%s\n' "$out" | awk -v n="$1" '$1 == n'; }
# refused NAME OPTION...: exit 2, one line naming the option, no directory made
refused() {
	local opt=$1 out rc
	shift
	out=$(bash "$S" --out "$T_TMP/nothing" "$@" 2>&1)
	rc=$?
	[ $rc = 2 ] || fail "$*: exit $rc, not 2: $out"
	[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "$*: not one line: $out"
	case $out in *"$opt"*) ;; *) fail "$*: the message does not name $opt: $out" ;; esac
	[ ! -e "$T_TMP/nothing" ] || fail "$*: --out made before the refusal"
}
refused --kernels --kernels 5.10
refused --kernels --kernels 6.12,6.2
refused --mem --mem 128M
refused --mem --mem 1T
refused --boots --boots 0
refused --boots --boots 33
refused --boots --boots
refused --jobs --jobs 0
refused --cells --cells fragfault,nosuch
refused --cells --kernels 6.1 --cells mthp
refused --tally --tally "$T_TMP/none"
refused --bogus --bogus
refused --sbatch-args --sbatch-args --exclusive
refused --slurm --slurm --tally "$T_TMP"
bash "$S" --help | grep -q -- '--tally DIR' || fail "--help does not list --tally"
[ "$(bash "$S" --list | wc -l)" = 10 ] || fail "--list: not ten cells: $(bash "$S" --list)"
n=$(bash "$S" --dry-run --boots 2 --jobs 2 | grep -c 'fidelity --kernel')
# 10 cells on 6.12, 6 on 6.1, at two sizes
[ "$n" = 32 ] || fail "--dry-run: $n commands, not 32"
bash "$S" --dry-run --boots 2 --jobs 2 --cells fragfault --kernels 6.1 --mem 1G |
	grep -q -- '--kernel 6.1 --mem 1G --boots 2 --runs 2 --jobs 2 .*--workload fragfault$' ||
	fail "--dry-run: $(bash "$S" --dry-run --cells fragfault --kernels 6.1 --mem 1G)"
# --slurm --dry-run: the cells as a thpemu matrix of fidelity cells, sbatch not run
out=$(bash "$S" --slurm --dry-run --boots 2 --cells fragfault,mthp --kernels 6.12 --mem 512M \
	--out "$T_TMP/sl" 2>&1) || fail "--slurm --dry-run: exit $?: $out"
expect_eq "--slurm: the matrix's cells" "$(cut -d= -f1 "$T_TMP/sl/matrix/cells.txt" | paste -sd,)" \
	512M-6.12-fragfault,512M-6.12-mthp
expect_eq "--slurm: the second cell's options" "$(jq -r '.fidelity.options | join(" ")' "$T_TMP/sl/matrix/cells/0001.json")" \
	"--kernel 6.12 --mem 512M --boots 2 --runs 2 --timeout 30m $(bash "$S" --list | awk '$1 == "mthp" { $1 = $2 = ""; print substr($0, 3) }')"
grep -q -- "--array=0-1" "$T_TMP/sl/matrix/matrix.sbatch" || fail "--slurm: no array of two tasks"
say "options: refusals, --list, --dry-run, --slurm --dry-run"

# --slurm's tally, with an sbatch of our own in PATH that ends the array as a cluster might: the
# first cell with a result, the second failed (thpemu fidelity exit 1: no result, its table kept
# in the matrix's log); each cell's rows are its JSON's, the failed one's counted, as here
mkdir -p "$T_TMP/fakebin"
cat >"$T_TMP/fakebin/sbatch" <<'SB'
#!/bin/sh
for a; do script=$a; done
d=$(dirname "$script")
echo '{"kind": "fidelity", "verdicts": {"n/a": 1, "close": 30, "in range": 2, "OFF": 7}}' >"$d/results/0000.json"
echo '{"kind": "fidelity", "verdicts": {"n/a": 0, "close": 6, "in range": 0, "OFF": 4}}' >"$d/logs/0001.fidelity.json"
echo "Submitted batch job 1"
exit 1
SB
chmod +x "$T_TMP/fakebin/sbatch"
out=$(PATH=$T_TMP/fakebin:$PATH bash "$S" --slurm --boots 2 --cells fragfault,mthp --kernels 6.12 \
	--mem 512M --out "$T_TMP/fs" 2>&1)
rc=$?
printf '%s\n' "$out" >"$T_OUT/slurm-tally.txt"
[ $rc = 1 ] || fail "--slurm with a failed cell: exit $rc, not 1: $out"
[[ "$(row 512M-6.12-fragfault)" =~ ^512M-6.12-fragfault\ +30\ +2\ +7\ +1\ +80.0\ %\ +-\ +ok$ ]] ||
	fail "--slurm: the cell with a result: $(row 512M-6.12-fragfault)"
[[ "$(row 512M-6.12-mthp)" =~ \ 6\ +0\ +4\ +0\ +60.0\ %\ +-\ +failed\ \(matrix/logs/0001.out\)$ ]] ||
	fail "--slurm: the failed cell: $(row 512M-6.12-mthp)"
[[ "$(row all)" =~ ^all\ +36\ +2\ +11\ +1\ +76.0\ %\ .*\ 1\ failed$ ]] || fail "--slurm: the total: $(row all)"
expect_eq "--slurm: the failed cell's JSON" "$(readlink "$T_TMP/fs/512M-6.12-mthp.json")" matrix/logs/0001.fidelity.json
out=$(bash "$S" --tally "$T_TMP/fs")
[[ "$(row all)" =~ ^all\ +36\ +2\ +11\ +1\ +76.0\ %\ .*\ 1\ failed$ ]] || fail "--tally of the --slurm run: $(row all)"
say "--slurm: a cell with a result and a failed one, tallied"

# --tally: two made-up cells (one failed), the totals their sums
mkdir -p "$T_TMP/kept"
echo '{"kind": "fidelity", "verdicts": {"n/a": 1, "close": 30, "in range": 2, "OFF": 7}}' \
	>"$T_TMP/kept/512M-6.12-fragfault.json"
echo '{"kind": "fidelity", "verdicts": {"n/a": 0, "close": 6, "in range": 0, "OFF": 4}}' \
	>"$T_TMP/kept/1G-6.1-unevictable.json"
printf '512M-6.12-fragfault\t30\t2\t7\t1\tok\t600\n1G-6.1-unevictable\t6\t0\t4\t0\texit 1\t300\n' \
	>"$T_TMP/kept/summary.tsv"
out=$(bash "$S" --tally "$T_TMP/kept")
rc=$?
[ $rc = 1 ] || fail "--tally with a failed cell: exit $rc, not 1: $out"
printf '%s\n' "$out" >"$T_OUT/tally.txt"
[[ "$(row 512M-6.12-fragfault)" =~ ^512M-6.12-fragfault\ +30\ +2\ +7\ +1\ +80.0\ %\ +0h10m00s\ +ok$ ]] ||
	fail "--tally: fragfault's row: $(row 512M-6.12-fragfault)"
[[ "$(row 1G-6.1-unevictable)" =~ \ 6\ +0\ +4\ +0\ +60.0\ %\ +0h05m00s\ +exit\ 1$ ]] ||
	fail "--tally: unevictable's row: $(row 1G-6.1-unevictable)"
[[ "$(row all)" =~ ^all\ +36\ +2\ +11\ +1\ +76.0\ %\ +0h15m00s\ +1\ failed$ ]] ||
	fail "--tally: the total: $(row all)"
printf '%s\n' "$out" | grep -q '2 cells, 38 of 50 rows inside the goal (76.0 %)' ||
	fail "--tally: the last line: $(printf '%s\n' "$out" | tail -1)"
say "totals: --tally of two cells"

# a tiny real run: one cell, one boot
need_root
need_uffd
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (qemu-system-x86)"
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
	skip "/bin/busybox is not a static busybox (busybox-static)"
command -v apt-get >/dev/null || skip "apt-get not available: Debian's kernels cannot be fetched"
"$THPEMU" oracle --fetch-only --kernel 6.12 >"$T_OUT/fetch.txt" 2>&1 ||
	fail "fetching 6.12: $(tail -1 "$T_OUT/fetch.txt")"
t=$SECONDS
out=$(bash "$S" --offline --kernels 6.12 --mem 512M --boots 1 --cells mthp --timeout 300s \
	--out "$T_OUT/run" 2>&1) || fail "the tiny run: exit $?: $out"
printf '%s\n' "$out" >"$T_OUT/run.txt"
j=$T_OUT/run/512M-6.12-mthp.json
[ -s "$j" ] || fail "no JSON kept: $(ls "$T_OUT/run")"
v=$(jq -r '.verdicts | "\(.close) +\(."in range") +\(.OFF) +\(."n/a")"' "$j")
[[ "$(row 512M-6.12-mthp)" =~ ^512M-6.12-mthp\ +$v\ .*\ ok$ ]] ||
	fail "the cell's row is not its JSON's verdicts ($v): $(row 512M-6.12-mthp)"
[[ "$(row all)" =~ ^all\ +$v\ .*\ ok$ ]] || fail "the total is not the one cell's: $(row all)"
[ "$(jq '.settings | length' "$j")" = 1 ] && [ "$(jq '.settings[0].real | length' "$j")" = 1 ] ||
	fail "the cell's JSON is not one setting of one boot"
say "a tiny run: one cell in $((SECONDS - t)) s: $(row all)"
