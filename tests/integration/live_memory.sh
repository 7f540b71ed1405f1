#!/usr/bin/env bash
# What thpemu manages and what it does not, as the report's memory census says it:
#   1. memmix under --allocator none: a brk heap (sbrk and glibc malloc's main arena) is listed
#      as unmanaged for that reason; a read-write mapping and a PROT_NONE | MAP_NORESERVE
#      reservation made accessible with mprotect (as V8 and the JVM commit heaps) are managed,
#      their data intact; the managed share is what the sizes make it;
#   2. the same with jemalloc: malloc's memory moves into managed mappings; the jemalloc is
#      libthpemu-jemalloc.so where the build made it (Debian's without its C++ part: no
#      libstdc++ in a C program's maps), and a C++ program's heap (cmake -P making an 80 MB
#      string: operator new is then libstdc++'s, whose malloc is jemalloc's) is managed as well,
#      where --allocator none leaves it unmanaged; memmix first allocates, writes and frees a
#      block from every function of glibc's replaceable set (pvalloc, which jemalloc lacks,
#      crashed it in free before libthpemu.so defined it);
#   3. a program whose memory is nearly all brk gets a warning naming the reason;
#   4. node (V8 reserves its heap PROT_NONE and commits it with mprotect): at least 80 % of its
#      anonymous memory is managed on an allocation-heavy script.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd node
need_cmd perl
PROG="$THPEMU_BUILD_DIR/tests/programs/memmix"
MiB=1048576
ge() { awk -v a="$2" -v b="$3" 'BEGIN { exit !(a >= b) }' || fail "$1: $2 < $3"; }
le() { awk -v a="$2" -v b="$3" 'BEGIN { exit !(a <= b) }' || fail "$1: $2 > $3"; }

"$PROG" 64 32 96 64 1500 >"$T_TMP/native" || fail "memmix natively: $(cat "$T_TMP/native")"
rep="$T_OUT/memmix.none.json"
"$THPEMU" run --allocator none --report "$rep" -- "$PROG" 64 32 96 64 1500 >"$T_TMP/out" \
	2>"$T_TMP/err" || fail "memmix under thpemu: $(cat "$T_TMP/out" "$T_TMP/err")"
cat "$T_TMP/err"
expect_eq "memmix output" "$(cat "$T_TMP/out")" "memmix: ok"
jq .memory "$rep" >"$T_OUT/memmix.none.memory.json"
# 96 MiB mapped read-write and 32 MiB of the reservation: managed
ge "managed bytes" "$(json "$rep" .memory.anon_managed_bytes)" $((124 * MiB))
# sbrk's 64 MiB and malloc's 32 MiB: the brk heap
ge "brk bytes" "$(json "$rep" .memory.unmanaged_by_reason.brk)" $((94 * MiB))
expect_eq "largest unmanaged" "$(json "$rep" '.memory.largest_unmanaged[0].name')" "[heap]"
expect_eq "its reason" "$(json "$rep" '.memory.largest_unmanaged[0].reason')" brk
share=$(json "$rep" .memory.managed_share)
ge "managed share (128 of ~225 MiB)" "$share" 0.52
le "managed share (128 of ~225 MiB)" "$share" 0.62
grep -q "memory at its largest: .* managed (5[0-9.]*%)" "$T_TMP/err" ||
	fail "the summary does not give the managed share"
"$THPEMU" report "$rep" >"$T_TMP/report" || fail "thpemu report of the run report failed"
grep -q "^  memory: .* MiB anonymous, 5[0-9.]* % managed, .*; unmanaged brk 9[0-9.]* MiB" \
	"$T_TMP/report" || fail "thpemu report does not render the census: $(cat "$T_TMP/report")"
say "allocator none: managed share $share, brk $(($(json "$rep" .memory.unmanaged_by_reason.brk) / MiB)) MiB"

rep="$T_OUT/memmix.jemalloc.json"
"$THPEMU" run --report "$rep" -- "$PROG" 64 32 96 64 1500 >"$T_TMP/out" 2>"$T_TMP/err" ||
	fail "memmix under thpemu with jemalloc: $(cat "$T_TMP/out" "$T_TMP/err")"
expect_eq "memmix output (jemalloc)" "$(cat "$T_TMP/out")" "memmix: ok"
ge "managed bytes (jemalloc)" "$(json "$rep" .memory.anon_managed_bytes)" $((150 * MiB))
le "brk bytes (jemalloc: sbrk only)" "$(json "$rep" .memory.unmanaged_by_reason.brk)" $((70 * MiB))
say "jemalloc: managed share $(json "$rep" .memory.managed_share)"

"$THPEMU" run --quiet -- cat /proc/self/maps >"$T_TMP/maps" || fail "cat under thpemu run"
if [ -e "$THPEMU_BUILD_DIR/libthpemu-jemalloc.so" ]; then
	grep -q "/libthpemu-jemalloc\.so$" "$T_TMP/maps" ||
		fail "thpemu run did not preload libthpemu-jemalloc.so: $(grep '\.so' "$T_TMP/maps")"
	! grep -q "libstdc++" "$T_TMP/maps" || fail "a C program under thpemu run maps libstdc++"
	say "jemalloc: libthpemu-jemalloc.so, no libstdc++"
	# a program linked with Debian's jemalloc is given the preloaded one (its soname), not a
	# second allocator with libstdc++ behind it
	if command -v cc >/dev/null && [ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so ]; then
		printf '%s\n' '#include <stdio.h>' '#include <stdlib.h>' \
			'int main(void) { char l[4096]; FILE *f = fopen("/proc/self/maps", "r");' \
			'free(malloc(64)); while (fgets(l, sizeof(l), f)) fputs(l, stdout); return 0; }' |
			cc -x c -o "$T_TMP/withjem" - -ljemalloc || fail "cc -ljemalloc"
		"$THPEMU" run --quiet -- "$T_TMP/withjem" >"$T_TMP/maps" || fail "withjem under thpemu run"
		! grep -q "/libjemalloc\.so\.2$\|libstdc++" "$T_TMP/maps" ||
			fail "a program linked with jemalloc loaded Debian's too: $(grep '\.so' "$T_TMP/maps")"
		say "a program linked with jemalloc: the preloaded one only"
	fi
else
	grep -q "/libjemalloc\.so\.2$" "$T_TMP/maps" || fail "thpemu run preloaded no jemalloc"
	say "jemalloc: Debian's libjemalloc.so.2 (libthpemu-jemalloc.so not built)"
fi
if command -v cmake >/dev/null; then
	printf '%s\n' 'string(REPEAT "0123456789" 8000000 s)' 'string(LENGTH "${s}" n)' \
		'message("length ${n}")' >"$T_TMP/big.cmake"
	for a in jemalloc none; do
		rep="$T_OUT/cmake.$a.json"
		"$THPEMU" run --quiet --allocator $a --report "$rep" -- cmake -P "$T_TMP/big.cmake" \
			>"$T_TMP/out" 2>&1 || fail "cmake -P under thpemu run: $(cat "$T_TMP/out")"
		expect_eq "cmake -P output ($a)" "$(cat "$T_TMP/out")" "length 80000000"
	done
	# the string's 80 MB at the least (one copy; how many cmake holds at its peak is cmake's)
	ge "a C++ heap's managed bytes (jemalloc)" \
		"$(json "$T_OUT/cmake.jemalloc.json" .memory.anon_managed_bytes)" $((76 * MiB))
	awk -v s="$(json "$T_OUT/cmake.jemalloc.json" .memory.managed_share)" 'BEGIN { exit !(s >= 0.9) }' ||
		fail "a C++ heap under jemalloc: managed share $(json "$T_OUT/cmake.jemalloc.json" .memory.managed_share), below 0.9"
	le "a C++ heap's managed bytes (none)" \
		"$(json "$T_OUT/cmake.none.json" .memory.anon_managed_bytes)" $((16 * MiB))
	say "C++ (cmake -P): managed share $(json "$T_OUT/cmake.jemalloc.json" .memory.managed_share), none $(json "$T_OUT/cmake.none.json" .memory.managed_share)"
fi

# nearly all brk: a warning says so, and why
"$THPEMU" run --allocator none -- perl -e \
	'my @a; push @a, "x" x 1000 for 1..100000; select(undef, undef, undef, 1.5); print scalar(@a), "\n"' \
	>"$T_TMP/out" 2>"$T_TMP/err" || fail "perl under thpemu: $(cat "$T_TMP/err")"
expect_eq "perl output" "$(cat "$T_TMP/out")" 100000
grep -q "^thpemu: warning: only .* managed; most of the rest (.* MiB) is brk heap" "$T_TMP/err" ||
	fail "no warning for a brk-heap program: $(cat "$T_TMP/err")"

# node: V8's heap is managed
cat >"$T_TMP/alloc.js" <<'JS'
const keep = [];
for (let i = 0; i < 120; i++) {
  const a = new Array(128 * 1024);
  for (let j = 0; j < a.length; j++) a[j] = {i, j};
  if (i % 2 == 0) keep.push(a);
}
setTimeout(() => {
  let sum = 0;
  for (const a of keep) sum += a[a.length - 1].j;
  console.log('sum', sum);
}, 2500);
JS
node "$T_TMP/alloc.js" >"$T_TMP/native"
rep="$T_OUT/node.json"
"$THPEMU" run --pool 2G --report "$rep" -- node "$T_TMP/alloc.js" >"$T_TMP/out" 2>"$T_TMP/err" ||
	fail "node under thpemu: $(cat "$T_TMP/err")"
diff -u "$T_TMP/native" "$T_TMP/out" >&2 || fail "node's output differs"
jq .memory "$rep" >"$T_OUT/node.memory.json"
ge "node's anonymous memory seen" "$(json "$rep" .memory.anon_program_bytes)" $((150 * MiB))
ge "node's managed share" "$(json "$rep" .memory.managed_share)" 0.8
say "node: $(($(json "$rep" .memory.anon_program_bytes) / MiB)) MiB anonymous, managed share $(json "$rep" .memory.managed_share)"
