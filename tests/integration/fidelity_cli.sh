#!/usr/bin/env bash
# thpemu fidelity's command line: every bad option is one line and exit status 2 before
# anything is fetched, booted or run; a missing qemu is the environment's failure (exit 1) and
# leaves no JSON behind. Needs no qemu.
. "$(dirname "$0")/lib.sh"

cache="$T_TMP/cache"
mkdir -p "$cache"
export THPEMU_ORACLE_CACHE=$cache

"$THPEMU" fidelity --help >"$T_TMP/help" || fail "--help failed"
grep -q -- "--defrag LIST" "$T_TMP/help" || fail "--help does not show --defrag"
"$THPEMU" --help | grep -q "^  fidelity " || fail "thpemu --help does not list fidelity"

bad_usage "--workload NAME is required" fidelity
bad_usage "unknown option '--bogus'" fidelity --bogus --workload fragfault
bad_usage "--at: 'middle'" fidelity --at middle --workload fragfault
bad_usage "--kernel: '5.10'" fidelity --kernel 5.10 --workload fragfault
bad_usage "--mem: '128M'" fidelity --mem 128M --workload fragfault
bad_usage "--mode: 'fast'" fidelity --mode fast --workload fragfault
bad_usage "--boots: '0'" fidelity --boots 0 --workload fragfault
bad_usage "--jobs: '65' is not an integer 1..64" fidelity --jobs 65 --workload fragfault
bad_usage "--runs: '33'" fidelity --runs 33 --workload fragfault
bad_usage "--timeout: '5'" fidelity --timeout 5 --workload fragfault
bad_usage "--enabled: enabled: 'sometimes'" fidelity --enabled sometimes --workload fragfault
bad_usage "--defrag: defrag: 'often'" fidelity --defrag always,often --workload fragfault
bad_usage "--defrag: 'never' is listed twice" fidelity --defrag never,never --workload fragfault
bad_usage "--defrag: no mode in ','" fidelity --defrag , --workload fragfault
bad_usage "--set: thpemu models no vm.min_free_kbytes" fidelity --set vm.min_free_kbytes=1 --workload fragfault
bad_usage "--set: give defrag with --defrag" fidelity --set defrag=never --workload fragfault
bad_usage "--set: unknown setting 'bogus'" fidelity --set bogus=1 --workload fragfault
bad_usage "--set: vm.compact_unevictable_allowed: '2'" \
	fidelity --set vm.compact_unevictable_allowed=2 --workload unevictable
# --check: the same checks, then exit 0 with nothing looked for (no qemu here) or written; and
# thpemu matrix refuses a fidelity cell the same checks refuse, in one line, before writing any
"$THPEMU" fidelity --check --qemu /nonexistent/qemu --json "$T_TMP/c.json" --defrag always,never \
	--workload fragfault --fill 90% >"$T_TMP/c.out" 2>&1 || fail "--check of good options: exit $?: $(cat "$T_TMP/c.out")"
[ ! -s "$T_TMP/c.out" ] && [ ! -e "$T_TMP/c.json" ] || fail "--check wrote something: $(cat "$T_TMP/c.out")"
bad_usage "--defrag: defrag: 'often'" fidelity --check --defrag often --workload fragfault
bad_usage "thpemu matrix: fidelity cell 'a': --mem: '128M'" \
	matrix --out "$T_TMP/m" --fidelity "a=--mem 128M --workload fragfault"
bad_usage "--fidelity: cell 'a': --json is the matrix's" \
	matrix --out "$T_TMP/m" --fidelity "a=--json x.json --workload fragfault"
bad_usage "--runs does not go with fidelity cells" \
	matrix --out "$T_TMP/m" --runs 2 --fidelity "a=--workload fragfault"
bad_usage "--fidelity: cell 'a' is given twice" \
	matrix --out "$T_TMP/m" --fidelity "a=--workload fragfault" --fidelity "a=--workload mthp"
bad_usage "--workload: a matrix of fidelity cells cannot hold workloads" \
	matrix --out "$T_TMP/m" --fidelity "a=--workload fragfault" --workload "b=/bin/true"
bad_usage "--workloads: a matrix of fidelity cells cannot hold workloads" \
	matrix --out "$T_TMP/m" --fidelity "a=--workload fragfault" --workloads /dev/null
bad_usage "--fidelity: cell 'a': --check runs no comparison" \
	matrix --out "$T_TMP/m" --fidelity "a=--check --workload fragfault"
bad_usage "--json and --html name the same file" \
	fidelity --check --json "$T_TMP/x.json" --html "$T_TMP/x.json" --workload fragfault
[ ! -e "$T_TMP/m" ] || fail "thpemu matrix wrote a refused matrix"
"$THPEMU" matrix --out "$T_TMP/m" --dry-run --fidelity "ff=--defrag always,never --workload fragfault" \
	--fidelity "ts=--kernel 6.1 --at start --workload thpscale --anon 90%" >"$T_TMP/m.out" 2>&1 ||
	fail "matrix --dry-run of two fidelity cells: exit $?: $(cat "$T_TMP/m.out")"
expect_eq "matrix: the second cell's options" \
	"$(json "$T_TMP/m/cells/0001.json" '.fidelity.options | join(" ")')" "--kernel 6.1 --at start --workload thpscale --anon 90%"
grep -q "^  cell 0000: fidelity ff: --defrag always,never --workload fragfault$" "$T_TMP/m.out" ||
	fail "matrix --dry-run does not list the cells: $(cat "$T_TMP/m.out")"
# a program of your own: static for the guest, --dynamic for thpemu's side, at start
FT="$THPEMU_BUILD_DIR/fragtouch"
bad_usage "--workload: '/bin/true' is not static: the guest has no libc" fidelity --workload /bin/true
bad_usage "give --dynamic PATH" fidelity --workload "$FT-static" 64 32
bad_usage "--dynamic: '$FT-static' is static" fidelity --dynamic "$FT-static" --workload "$FT-static"
bad_usage "--dynamic: '/nonexistent' is not an executable file" \
	fidelity --dynamic /nonexistent --workload "$FT-static"
bad_usage "--at phase: a program of yours" fidelity --at phase --dynamic "$FT" --workload "$FT-static"
bad_usage "--dynamic: only with --workload PATH" fidelity --dynamic "$FT" --workload fragfault
bad_usage "'50%': a percentage only for the suite's" \
	fidelity --dynamic "$FT" --workload "$FT-static" 50% 32
bad_usage "--disk: '1M' is not a size 16M..64G" fidelity --disk 1M --workload fragfault
bad_usage "--disk-write-rate needs --disk" fidelity --disk-write-rate 3MB/s --workload fragfault
bad_usage "not a workload of the suite" fidelity --at start --workload nosuch
bad_usage "--at phase: 'khugepaged' builds state of its own" fidelity --workload khugepaged
bad_usage "give a percentage as a separate argument" fidelity --workload fragfault --fill=90%
bad_usage "only for --fill, --region, --anon or --pressure" \
	fidelity --workload fragfault --keep 50%
bad_usage "double quote" fidelity --workload fragfault 'a"b'
bad_usage "--json: '/proc/" fidelity --json /proc/thpemu-fidelity.json --workload fragfault
bad_usage "--html: '/proc/" fidelity --html /proc/thpemu-fidelity.html --workload fragfault
bad_usage "name the same file" fidelity --json "$T_TMP/x" --html "$T_TMP/x" --workload fragfault
bad_usage "--real-from: '/nonexistent' is not a directory" \
	fidelity --real-from /nonexistent --workload fragfault

# --real-from: the real side read back from a kept console log; nothing boots (no qemu here)
kept="$T_TMP/kept/1-always/real"
mkdir -p "$kept"
{
	printf 'ORACLE hello 1\nORACLE kernel 6.12.0-kept\nORACLE setting enabled ok\n'
	printf 'ORACLE wl fragfault 1\nORACLE info fill_bytes=1048576 region_bytes=4194304\n'
	printf 'ORACLE snap phase-begin vmstat thp_fault_alloc 10\n'
	printf 'ORACLE snap phase-end vmstat thp_fault_alloc 12\n'
	printf 'ORACLE fault 0 huge 10.0\nORACLE fault 1 base 20.0\n'
	printf 'ORACLE extent 0 huge\nORACLE extent 1 base\n'
	printf 'ORACLE summary extents=2 huge=1 base=1 huge_pct=50.0\n'
	printf 'ORACLE exit 0 1.0\nORACLE end\n'
} >"$kept/boot-1.log"
# what made it, as --keep records it: the same request as below (pinned 512M 6.12, one boot
# from seed 1, fragfault without arguments, enabled=always defrag=always, no --set, no disk)
record() {
	cat <<-EOF
		{"kind": "fidelity-real", "version": 1, "kernel": "6.12", "mem_bytes": 536870912,
		 "mode": "pinned", "smp": 1, "boots": $1, "seed": 1, "at": "phase",
		 "workload": "fragfault", "args": [], "enabled": "always", "defrag": ["always"],
		 "set": [], "disk_bytes": 0, "disk_write_bps": 0}
	EOF
}
# a kept real side is refused, before anything runs, unless it is this request's
bad_usage "--real-from: '$T_TMP/kept' has no fidelity-real.json" \
	fidelity --real-from "$T_TMP/kept" --boots 1 --defrag always --workload fragfault
record 1 >"$T_TMP/kept/fidelity-real.json"
bad_usage "(--seed 1 there, 2 here): its real side is not this one's" \
	fidelity --real-from "$T_TMP/kept" --boots 1 --seed 2 --defrag always --workload fragfault
bad_usage "(--mem 512M there, 1024M here; --defrag always there, always,never here)" \
	fidelity --real-from "$T_TMP/kept" --boots 1 --mem 1G --defrag always,never --workload fragfault
bad_usage "(the workload's arguments none there, --region 8M here)" \
	fidelity --real-from "$T_TMP/kept" --boots 1 --defrag always --workload fragfault --region 8M
bad_usage "(--set none there, vm.compaction_proactiveness=20 here)" fidelity --real-from "$T_TMP/kept" --boots 1 --defrag always \
	--set vm.compaction_proactiveness=20 --workload fragfault
bad_usage "(--kernel 6.12 there, 6.1 here)" \
	fidelity --real-from "$T_TMP/kept" --kernel 6.1 --boots 1 --defrag always --workload fragfault
record 2 >"$T_TMP/kept2.json"
mkdir -p "$T_TMP/kept2/1-always/real"
cp "$T_TMP/kept2.json" "$T_TMP/kept2/fidelity-real.json"
cp "$kept/boot-1.log" "$T_TMP/kept2/1-always/real/"
bad_usage "kept2/1-always/real/boot-2.log': No such file or directory" \
	fidelity --real-from "$T_TMP/kept2" --boots 2 --defrag always --workload fragfault
echo '{"kind": "oracle"}' >"$T_TMP/kept2/fidelity-real.json"
bad_usage "is not a record of thpemu fidelity's real side" \
	fidelity --real-from "$T_TMP/kept2" --boots 2 --defrag always --workload fragfault
if [ "$(id -u)" = 0 ] && [ -w /dev/userfaultfd ]; then
	"$THPEMU" fidelity --real-from "$T_TMP/kept" --qemu /nonexistent/qemu --boots 1 \
		--defrag always --json "$T_TMP/kept.json" --workload fragfault >"$T_TMP/kept.out" \
		2>"$T_TMP/kept.err"
	expect_eq "--real-from without a snapshot: status" "$?" 1
	expect_eq "--real-from: the kept boot" "$(json "$T_TMP/kept.json" '.settings[0].real[0].status')" ok
	expect_eq "--real-from: its counter" \
		"$(json "$T_TMP/kept.json" '.settings[0].real[0].values.thp_fault_alloc')" 2
	expect_eq "--real-from: its huge %" \
		"$(json "$T_TMP/kept.json" '.settings[0].real[0].values.huge_fault_pct')" 50
	expect_eq "--real-from: thpemu's run" \
		"$(json "$T_TMP/kept.json" '.settings[0].thpemu[0].status')" no-snapshot
	# a kept snapshot must be the one its console log carries ("abc": FNV-1a 64 e71fa2190541574b)
	mkdir -p "$T_TMP/kept3/1-always/real"
	record 1 >"$T_TMP/kept3/fidelity-real.json"
	{
		cat "$kept/boot-1.log"
		printf 'ORACLE snapshot begin phase\nORACLE S YWJj\n'
		printf 'ORACLE snapshot end 3 e71fa2190541574b\n'
	} >"$T_TMP/kept3/1-always/real/boot-1.log"
	printf abd >"$T_TMP/kept3/1-always/real/boot-1.snap"
	"$THPEMU" fidelity --real-from "$T_TMP/kept3" --boots 1 --defrag always \
		--json "$T_TMP/kept3.json" --workload fragfault >/dev/null 2>&1
	expect_eq "another run's snapshot: status" "$?" 1
	expect_eq "another run's snapshot: the boot's note" \
		"$(json "$T_TMP/kept3.json" '.settings[0].real[0].note')" \
		"boot-1.snap is not the snapshot its console log carries"
	expect_eq "another run's snapshot: not run from" \
		"$(json "$T_TMP/kept3.json" '.settings[0].thpemu[0].status')" no-snapshot
	rm "$T_TMP/kept3/1-always/real/boot-1.snap"
	"$THPEMU" fidelity --real-from "$T_TMP/kept3" --boots 1 --defrag always \
		--json "$T_TMP/kept3.json" --workload fragfault >/dev/null 2>&1
	expect_eq "a lost snapshot: the boot's note" \
		"$(json "$T_TMP/kept3.json" '.settings[0].real[0].note')" \
		"its kept snapshot boot-1.snap: No such file or directory"
	# --keep records what made the real side even when no boot could run (no kernel in the
	# cache, --offline): read back by --real-from, the same request passes the record and stops
	# at the missing console log (an earlier request's log left in the reused DIR is removed
	# before anything boots); with one setting changed it is refused for that setting
	if [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; then
		mkdir -p "$T_TMP/made/1-always/real"
		cp "$T_TMP/kept3/1-always/real/boot-1.log" "$T_TMP/made/1-always/real/boot-1.log" ||
			fail "the earlier request's log could not be made"
		"$THPEMU" fidelity --offline --qemu /bin/false --keep "$T_TMP/made" --boots 2 \
			--defrag always,never --workload fragfault --fill 90% >/dev/null 2>"$T_TMP/made.err"
		expect_eq "a keep without a kernel: status" "$?" 1
		expect_eq "its record" "$(json "$T_TMP/made/fidelity-real.json" '[.boots, .defrag[1], .args[1]] | join(" ")')" "2 never 90%"
		bad_usage "made/1-always/real/boot-1.log': No such file or directory" \
			fidelity --real-from "$T_TMP/made" --boots 2 --defrag always,never \
			--workload fragfault --fill 90%
		bad_usage "(--enabled always there, madvise here): its real side is not this one's" \
			fidelity --real-from "$T_TMP/made" --boots 2 --enabled madvise \
			--defrag always,never --workload fragfault --fill 90%
	fi
fi

# the environment: exit 1, one line, nothing written
"$THPEMU" fidelity --qemu /nonexistent/qemu --json "$T_TMP/f.json" --workload fragfault \
	>/dev/null 2>"$T_TMP/err"
expect_eq "missing qemu status" "$?" 1
grep -q "not found (apt-get install qemu-system-x86)" "$T_TMP/err" || fail "$(cat "$T_TMP/err")"
[ ! -e "$T_TMP/f.json" ] || fail "a JSON was left after a failure before any boot"
say "ok"
