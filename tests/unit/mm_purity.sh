#!/usr/bin/env bash
# core/mm is pure (mm/mm.h): no system calls, no threads, no clock, no environment, no stdio.
# This checks what was built, not the sources: every symbol an object of libthpemu_mm.a leaves
# undefined is defined by another of its objects, or is on the allow-list below. A function of
# another thpemu library (util/units.c's parsers) is allowed when the object defining it passes
# the same check. Compiler and sanitizer runtime symbols are allowed; a fortified __X_chk counts
# as X.
#
# What "pure" allows, and why:
#   memory and strings     memcpy, strlen, strcmp, strchr, ...: functions of their arguments
#   formatting to a buffer snprintf, vsnprintf: error messages and spec strings into the
#                          caller's buffer, never a stream
#   number parsing         strtoull, strtod (util/units.c) and __errno_location, their range
#                          result
#   math                   sqrt, log, exp, ...: the fragmentation index and friends
#   calloc, free           only in pool.c and boundary.c: mm_create / mm_destroy take the pool's
#                          descriptor and arrays from calloc when the environment gives no
#                          meta_alloc (the simulator, tests); never on a fault path
# Not allowed, for example: fopen, fread, open, read, write, printf, fprintf, puts, getenv,
# opendir, readdir, malloc elsewhere, clock_gettime, time, nanosleep, pthread_*, syscall, abort,
# __assert_fail (nothing in mm aborts), qsort (glibc's may allocate a merge buffer).
#
# usage: mm_purity.sh NM BUILD_DIR   (prints one line: objects, symbols, all allowed)
set -euo pipefail
nm=${1:?usage: mm_purity.sh NM BUILD_DIR}
build=${2:?usage: mm_purity.sh NM BUILD_DIR}
mm_lib=$build/core/libthpemu_mm.a
util_lib=$build/core/libthpemu_util.a
for f in "$mm_lib" "$util_lib"; do
	[ -s "$f" ] || {
		echo "mm purity: $f is missing (build first)"
		exit 1
	}
done

allowed=" memcpy memmove memset memcmp memchr strlen strnlen strcmp strncmp strcasecmp
	strncasecmp strchr strrchr strstr strspn strcspn strcpy strncpy strcat strncat
	snprintf vsnprintf strtol strtoul strtoll strtoull strtod __errno_location
	sqrt log log2 log10 exp exp2 pow floor ceil fabs round lround llround "
allowed=$(echo $allowed) # one space between names
only_in_pool="calloc free" # with the objects that may use them:
pool_objects=" pool.c.o boundary.c.o "

# "OBJECT SYMBOL" per undefined symbol, and the symbols an archive defines.
undefined() { "$nm" -A -u "$1" | awk '{ n = split($1, p, ":"); print p[n - 1], $NF }' | sed 's/@.*//'; }
defined() { "$nm" -A -g --defined-only "$1" | awk '{ n = split($1, p, ":"); print p[n - 1], $NF }'; }

mm_undef=$(undefined "$mm_lib")
mm_def=$(defined "$mm_lib" | awk '{ print $2 }' | sort -u)
util_def=$(defined "$util_lib")
util_undef=$(undefined "$util_lib")
nobj=$(ar t "$mm_lib" | grep -c '\.o$')
[ "$nobj" -gt 0 ] || {
	echo "mm purity: $mm_lib holds no object"
	exit 1
}

# The runtime's own symbols, or a fortified function named as what it fortifies.
base_name() {
	case $1 in
	__asan_* | __ubsan_* | __tsan_* | __msan_* | __lsan_* | __sanitizer_* | __stack_chk_fail | \
		__popcount?i2 | __clz?i2 | __ctz?i2 | __parity?i2 | __ffs?i2 | \
		_GLOBAL_OFFSET_TABLE_ | __dso_handle)
		echo "(runtime)" ;;
	__*_chk) local s=${1#__}; echo "${s%_chk}" ;;
	*) echo "$1" ;;
	esac
}

bad=0
checked=""
pulled=""
queue=$mm_undef
while [ -n "$queue" ]; do
	next=""
	while read -r obj sym; do
		[ -n "$sym" ] || continue
		grep -qxF "$sym" <<<"$mm_def" && continue # another object of mm
		name=$(base_name "$sym")
		checked+="$sym"$'\n'
		[ "$name" = "(runtime)" ] && continue
		case " $allowed " in *" $name "*) continue ;; esac
		case " $only_in_pool " in
		*" $name "*)
			case $pool_objects in *" $obj "*) continue ;; esac
			echo "mm purity: $obj calls $name: allowed only where a pool is made ($(echo $pool_objects))"
			bad=1
			continue
			;;
		esac
		def=$(awk -v s="$sym" '$2 == s { print $1; exit }' <<<"$util_def")
		if [ -n "$def" ]; then # a thpemu function: its object must be pure too
			case " $pulled " in *" $def "*) ;; *)
				pulled+=" $def"
				next+=$(awk -v o="$def" '$1 == o' <<<"$util_undef")$'\n'
				;;
			esac
			continue
		fi
		echo "mm purity: $obj calls $name: not allowed in core/mm (no system calls, threads," \
			"clock, environment or stdio: see mm/mm.h and tests/unit/mm_purity.sh)"
		bad=1
	done <<<"$queue"
	queue=$next
done
nsym=$(sort -u <<<"$checked" | grep -c . || true)
[ "$bad" = 0 ] || {
	echo "mm purity: FAILED"
	exit 1
}
echo "mm purity: $nobj objects (and util's${pulled:- none}), $nsym undefined symbols, all allowed"
