#!/usr/bin/env bash
# A `make -j2` build of a small C project under one `thpemu run` is one machine: one report,
# every process of the build (make, the shells, gcc's drivers, cc1, as, ld) managed on one pool,
# and the program it builds works as a natively built one.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd make
need_cmd gcc
src="$T_TMP/proj"
mkdir -p "$src"
for i in 1 2 3 4 5 6; do
	cat >"$src/f$i.c" <<EOF
#include <stdlib.h>
#include <string.h>
unsigned long f$i(unsigned long x)
{
	unsigned long *v = malloc(1 << 20), s = 0;
	for (unsigned long j = 0; j < (1 << 17); j++)
		v[j] = x * $i + j;
	for (unsigned long j = 0; j < (1 << 17); j++)
		s += v[j];
	free(v);
	return s;
}
EOF
done
{
	echo '#include <stdio.h>'
	for i in 1 2 3 4 5 6; do echo "unsigned long f$i(unsigned long);"; done
	echo 'int main(void) { unsigned long s = 0;'
	for i in 1 2 3 4 5 6; do echo "s += f$i($i);"; done
	echo 'printf("sum %lu\n", s); return 0; }'
} >"$src/main.c"
printf 'OBJ = main.o f1.o f2.o f3.o f4.o f5.o f6.o\nprog: $(OBJ)\n\t$(CC) -o $@ $(OBJ)\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n' \
	>"$src/Makefile"

make -s -C "$src" -j2 >/dev/null || fail "native build"
want=$("$src/prog") || fail "natively built program"
make -s -C "$src" clean >/dev/null 2>&1 || rm -f "$src"/*.o "$src/prog"
rep="$T_OUT/make.json"
"$THPEMU" run --quiet --pool 256M --report "$rep" -- make -s -C "$src" -j2 >"$T_TMP/out" 2>&1 ||
	fail "make -j2 under thpemu: $(cat "$T_TMP/out")"
expect_eq "the program built under thpemu" "$("$src/prog")" "$want"
n=$(json "$rep" .program.processes)
[ "$n" -ge 10 ] || fail "only $n managed processes in a build of 7 compilations and a link"
expect_eq "one machine" "$(json "$rep" .program.machine.shared)" true
expect_eq "one pool of 256 MiB" "$(json "$rep" .host.pool.frames)" 65536
expect_eq "machine check" "$(json "$rep" .program.machine.check)" ok
expect_eq "every program frame back after the build" "$(json "$rep" .host.pool.anon)" 0
faults=$(json "$rep" .faults.total)
[ "$faults" -gt 0 ] || fail "no faults in a whole build"
say "make -j2: $n processes on one 256 MiB machine, $faults faults," \
	"$(json "$rep" .program.machine.processes_reaped) processes reaped"
