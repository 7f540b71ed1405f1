#!/usr/bin/env bash
# Every module file core/<module>/<file>.c has a unit-test program tests/unit/<module>_<file>.c,
# or a row in tests/unit/README.md's table of exceptions saying where it is tested and why it
# has no program of its own. Fails on a file with neither, and on a row naming no such file.
set -euo pipefail
src=${THPEMU_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
readme="$src/tests/unit/README.md"
cd "$src"
bad=0
listed=$(sed -n 's/^| `\(core\/[a-z_]*\/[a-z0-9_]*\.c\)` |.*/\1/p' "$readme" | sort)
for f in core/*/*.c; do
	mod=$(basename "$(dirname "$f")")
	base=$(basename "$f" .c)
	has_prog=0
	[ -f "tests/unit/${mod}_${base}.c" ] && has_prog=1
	in_table=0
	grep -qxF "$f" <<<"$listed" && in_table=1
	if [ $has_prog = 0 ] && [ $in_table = 0 ]; then
		echo "unit map: $f has no tests/unit/${mod}_${base}.c and no row in tests/unit/README.md"
		bad=1
	elif [ $has_prog = 1 ] && [ $in_table = 1 ]; then
		echo "unit map: $f has tests/unit/${mod}_${base}.c: its exception row is stale"
		bad=1
	fi
done
for f in $listed; do
	[ -f "$f" ] || { echo "unit map: tests/unit/README.md lists $f, which does not exist"; bad=1; }
done
n=$(ls core/*/*.c | wc -l)
e=$(wc -l <<<"$listed")
[ $bad = 0 ] && echo "unit map: $n module files, $((n - e)) with a program of their own, $e listed exceptions"
exit $bad
