#!/usr/bin/env bash
# libthpemu.so never calls a name it exports (core/util/sys.h): no dynamic relocation of the
# library - JUMP_SLOT (a PLT call), GLOB_DAT (a function pointer through the GOT) or any other -
# is against a name of the `global:` list of core/preload/libthpemu.map (mmap, close, syscall, the
# rlimit calls, ... and the public API). Such a call would reach the library's own interposer,
# or another preloaded library's, instead of the system call the emulator meant; on the fault
# path or in a signal handler it would also clobber the program's errno.
#
# Usage: live_selfcalls.sh [LIBRARY]   (default: the build's libthpemu.so; an argument checks
# another build of it, e.g. one of an older commit).
. "$(dirname "$0")/lib.sh"
need_cmd readelf
MAP="$THPEMU_SOURCE_DIR/core/preload/libthpemu.map"
LIB=${1:-$LIBTHPEMU}
[ -r "$MAP" ] || fail "no version script at $MAP"
[ -r "$LIB" ] || fail "no library at $LIB"

# The names between "global:" and "local:", one per line ("name;" entries; comments skipped).
names=$(sed -e 's|/\*.*\*/||g' "$MAP" | awk '
	/^[ \t]*global:/ { on = 1; next }
	/^[ \t]*local:/ { on = 0 }
	on && match($0, /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/) {
		s = substr($0, RSTART, RLENGTH); gsub(/[ \t;]/, "", s); print s
	}')
count=$(printf '%s\n' "$names" | grep -c .)
[ "$count" -ge 10 ] || fail "found only $count exported names in $MAP: the parser is out of date"
for n in mmap close syscall sigaction; do
	printf '%s\n' "$names" | grep -qx "$n" || fail "$n is missing from the names read from $MAP"
done

# Every dynamic relocation with a symbol: "TYPE NAME" (NAME without its @VERSION).
relocs=$(readelf -rW "$LIB" | awk '
	$1 ~ /^[0-9a-f]+$/ && NF >= 5 && $3 ~ /^R_/ { n = $5; sub(/@.*/, "", n); print $3, n }')
[ -n "$relocs" ] || fail "readelf shows no relocations in $LIB"

bad=$(printf '%s\n' "$relocs" | awk 'NR == FNR { want[$1] = 1; next } ($2 in want)' \
	<(printf '%s\n' "$names") -)
if [ -n "$bad" ]; then
	printf '%s: the library calls (or takes the address of) names it exports:\n' "$T_NAME" >&2
	printf '%s\n' "$bad" | sort | uniq -c | sed 's/^/    /' >&2
	fail "use the raw system calls of core/util/sys.h (or a static body) instead"
fi
say "no relocation against any of the $count exported names ($(printf '%s\n' "$relocs" | wc -l) relocations checked)"
