#!/usr/bin/env bash
# python3, sort, sqlite3 and gzip under `thpemu run` print byte-identical output to their native
# runs, with thousands of managed faults (4 KiB decisions under modern-never) and with huge
# decisions (modern-always) alike.
# Argument: the policy, modern-never or modern-always (default both, one after the other); CI
# runs the two as two tests side by side (tests/integration/live.cmake).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
for c in python3 sqlite3 gzip sort jq; do need_cmd "$c"; done

python3 - "$T_TMP/input.txt" <<'PY'
import random, sys
r = random.Random(7)
with open(sys.argv[1], "w") as f:
    for i in range(300000):
        f.write("%08x %d %s\n" % (r.getrandbits(32), i, "x" * (i % 23)))
PY
cat >"$T_TMP/work.py" <<'PY'
import hashlib
d = {}
for i in range(300000):
    d["k%d" % i] = [i, str(i) * 3, i * 1.5]
words = sorted(d, key=lambda k: (len(k), k[::-1]))
h = hashlib.sha256()
for k in words[::7]:
    h.update(repr(d[k]).encode())
big = bytearray(8 << 20)
for i in range(0, len(big), 4096):
    big[i] = i % 251
h.update(bytes(big[::4096]))
print(len(d), h.hexdigest())
PY
cat >"$T_TMP/work.sql" <<'SQL'
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, printf('%08x-%d', (x * 2654435761) % 4294967296, x % 97) FROM c;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(a), min(b), max(b) FROM t;
SELECT b FROM t ORDER BY b LIMIT 5;
SELECT a % 13, count(*), sum(length(b)) FROM t GROUP BY a % 13 ORDER BY 1;
SQL

# run_case NAME POLICY MIN_FAULTS CMD... : native and emulated stdout must match byte for byte
run_case() {
	local name=$1 policy=$2 min=$3 out rep faults
	shift 3
	out="$T_TMP/$name.$policy"
	rep="$T_OUT/$name.$policy.json"
	"$@" >"$out.native" || fail "$name: native run failed"
	"$THPEMU" run --quiet --policy "$policy" --pool 2G --report "$rep" -- "$@" >"$out.emul" ||
		fail "$name ($policy): emulated run failed"
	cmp -s "$out.native" "$out.emul" || fail "$name ($policy): output differs from the native run"
	faults=$(json "$rep" .faults.total)
	[ "$faults" -ge "$min" ] || fail "$name ($policy): $faults managed faults, expected >= $min"
	expect_eq "$name ($policy) uffd errors" "$(json "$rep" .host.uffd_errors)" 0
	expect_eq "$name ($policy) exit status" "$(json "$rep" .program.exit_status)" 0
	if [ "$policy" = modern-always ] && [ "$min" -gt 0 ]; then
		[ "$(json "$rep" .faults.huge)" -ge 1 ] || fail "$name ($policy): no huge decision"
	fi
	say "$name ($policy): identical output, $faults faults ($(json "$rep" .faults.huge) huge)"
}

# modern-never: every decision is 4 KiB, so thousands of faults; modern-always: fewer, larger
policies=("$@")
[ $# -gt 0 ] || policies=(modern-never modern-always)
for policy in "${policies[@]}"; do
	case $policy in
	modern-never | modern-always) ;;
	*) fail "policy must be modern-never or modern-always, not '$policy'" ;;
	esac
	min=1000
	[ $policy = modern-always ] && min=10
	run_case python3 $policy $min python3 "$T_TMP/work.py"
	run_case sort $policy $min sort "$T_TMP/input.txt"
	run_case sqlite3 $policy $min sqlite3 :memory: -init /dev/null -batch ".read $T_TMP/work.sql"
	# gzip keeps all its buffers in static arrays (BSS), which no LD_PRELOAD library can
	# reach: its output must match, its managed faults are few or none
	run_case gzip $policy 0 gzip -9 -n -c "$T_TMP/input.txt"
done
