#!/usr/bin/env bash
# Secure execution (a set-user-ID program, AT_SECURE): the caller's environment is not to be
# trusted, so the library ignores every THPEMU_* variable - it writes no report or trace where
# the caller says - and the program runs unmanaged, saying so once. The dynamic loader only
# preloads a library from a system directory with the set-user-ID bit in this mode, so the test
# installs a copy there (as an administrator who put libthpemu.so in /usr/lib would) and removes
# it afterwards.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd setpriv
lib=/usr/lib/libthpemu-sectest-$$.so
cp "$LIBTHPEMU" "$lib"
at_exit "rm -f '$lib'"
chmod 4755 "$lib"
dir="$T_TMP/pub"
mkdir -m 755 "$dir"
chmod 755 "$T_TMP"
cp /bin/true "$dir/suid-true" # exits in place: the library's exit hook runs (reports are written there)
chown root:root "$dir/suid-true"
chmod 4755 "$dir/suid-true"

# nobody runs a set-user-ID-root program with the library preloaded and paths of its choosing
# (before, it created both files, owned by root, where nobody said)
setpriv --reuid=65534 --regid=65534 --clear-groups \
	env LD_PRELOAD="$(basename "$lib")" THPEMU_REPORT="$dir/report.%p.json" \
	THPEMU_TRACE="$dir/trace.%p" "$dir/suid-true" \
	>"$T_TMP/out" 2>"$T_TMP/err" || fail "the set-user-ID program failed: $(cat "$T_TMP/err")"
grep -q 'secure execution' "$T_TMP/err" || fail "the library did not load, or said nothing: $(cat "$T_TMP/err")"
left=$(ls "$dir" | grep -v '^suid-true$' || true)
[ -z "$left" ] || fail "files written from THPEMU_* paths in secure execution: $left"
say "secure execution: $(grep 'secure execution' "$T_TMP/err" | head -1)"
