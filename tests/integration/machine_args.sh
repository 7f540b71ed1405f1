#!/usr/bin/env bash
# What names a machine, and what does not:
#   1. an option where `thpemu machine` wants a NAME (start -x, status -x, stop --json) is an
#      unknown option (exit 2, one line), never a machine called "-x"; run --machine -x too;
#   2. a THPEMU_MACHINE that is not HOSTPID:FD under a bare preload: one line naming the variable
#      and what it accepts, the program runs unmanaged with its own exit status; one that is
#      well formed but names a dead host or something that is not a machine: one line, unmanaged.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
HOLD="$THPEMU_BUILD_DIR/tests/programs/holdcheck"

# 1. options in NAME's place (a build that took one for a name is left no machine running)
at_exit "'$THPEMU' machine stop -x"
for sub in start status stop; do
	bad_usage "$sub: unknown option '-x'" machine "$sub" -x
done
bad_usage "start: unknown option '--pool'" machine start --pool 64M
bad_usage "stop: unknown option '--json'" machine stop --json
grep -q "@thpemu-machine-[0-9]*--" /proc/net/unix && fail "a machine named like an option runs"
bad_usage "'-x' is not a machine name" run --machine -x -- true
say "options where a NAME goes: unknown options"

# 2. THPEMU_MACHINE under a bare preload
# preload VALUE: holdcheck with THPEMU_MACHINE=VALUE (exit status 0 expected), its stderr in err
preload() {
	LD_PRELOAD="$LIBTHPEMU" THPEMU_MACHINE="$1" "$HOLD" 4 0 >"$T_TMP/out" 2>"$T_TMP/err" ||
		fail "THPEMU_MACHINE='$1': exit status $? ($(cat "$T_TMP/out" "$T_TMP/err"))"
	grep -q "managed start=0 end=0 passes=1 data ok" "$T_TMP/out" ||
		fail "THPEMU_MACHINE='$1': not unmanaged: $(cat "$T_TMP/out")"
	expect_eq "THPEMU_MACHINE='$1': lines ($(cat "$T_TMP/err"))" "$(wc -l <"$T_TMP/err")" 1
	grep -q "^thpemu: THPEMU_MACHINE.*; running unmanaged$" "$T_TMP/err" ||
		fail "THPEMU_MACHINE='$1': $(cat "$T_TMP/err")"
}
for v in garbage 12:x :3 -1:3 0:3 99999999999:3 "$$"; do
	preload "$v"
	grep -qF "THPEMU_MACHINE='$v' is not a machine's rendezvous (accepted: HOSTPID:FD" \
		"$T_TMP/err" || fail "THPEMU_MACHINE='$v': $(cat "$T_TMP/err")"
done
# the exit status is the program's
LD_PRELOAD="$LIBTHPEMU" THPEMU_MACHINE=garbage sh -c 'exit 7' 2>/dev/null
expect_eq "exit status under a bad THPEMU_MACHINE" $? 7
say "THPEMU_MACHINE=garbage: $(cat "$T_TMP/err")"

# a dead host: a process that is gone
sh -c 'exit 0' &
dead=$!
wait $dead
preload "$dead:3"
grep -qF "the host is gone" "$T_TMP/err" || fail "dead host: $(cat "$T_TMP/err")"
# something that is not a machine: a process's descriptor of a plain file
echo plain >"$T_TMP/plain"
sleep 30 3<"$T_TMP/plain" &
other=$!
at_exit "kill $other"
preload "$other:3"
grep -qF "is not a machine segment" "$T_TMP/err" || fail "not a machine: $(cat "$T_TMP/err")"
kill $other
say "a dead or foreign THPEMU_MACHINE: one line, unmanaged"
