#!/usr/bin/env bash
# dlopen under `thpemu run` (which preloads jemalloc): a library loaded with RTLD_DEEPBIND binds
# malloc and free to the C library's, so memory crossed allocators and the program crashed (PHP
# loads every extension so). Such loads are made without the flag; dlopen otherwise behaves as
# natively (a library found through the program's RUNPATH, the main program's handle, the error
# for a missing library).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/dl_check"

"$PROG" >"$T_TMP/native" || fail "native run failed: $(cat "$T_TMP/native")"
"$THPEMU" run --quiet --report "$T_OUT/dl_check.json" -- "$PROG" >"$T_TMP/emu"
expect_eq "dl_check: exit status" $? 0
cmp -s "$T_TMP/native" "$T_TMP/emu" || fail "dl_check: output differs: $(cat "$T_TMP/emu")"
expect_eq "dl_check: DEEPBIND loads made without it" \
	"$(json "$T_OUT/dl_check.json" .host.deepbind_loads)" 1

"$THPEMU" run --quiet --allocator none -- "$PROG" >"$T_TMP/none"
expect_eq "dl_check, --allocator none: exit status" $? 0
cmp -s "$T_TMP/native" "$T_TMP/none" || fail "dl_check, --allocator none: output differs"
say "dl_check: as natively, with and without a preloaded allocator"

need_cmd php
script='$a = []; for ($i = 0; $i < 20000; $i++) $a[] = str_repeat("x", $i % 100);
echo count($a), " ", strlen(json_encode($a)), " ", extension_loaded("ctype") ? "ctype" : "-", "\n";'
php -r "$script" >"$T_TMP/php.native" || fail "php natively failed"
"$THPEMU" run --quiet --report "$T_OUT/php.json" -- php -r "$script" >"$T_TMP/php.emu" 2>&1
expect_eq "php: exit status" $? 0
cmp -s "$T_TMP/php.native" "$T_TMP/php.emu" || fail "php: output differs: $(cat "$T_TMP/php.emu")"
n=$(json "$T_OUT/php.json" .host.deepbind_loads)
[ "$n" -gt 0 ] || fail "php: no extension was loaded with RTLD_DEEPBIND?"
say "php $(php -r 'echo PHP_VERSION;'): $(cat "$T_TMP/php.emu"), $n extensions loaded without RTLD_DEEPBIND"
