#!/usr/bin/env bash
# A run whose program was not managed says so, with why, and counts it; --require-managed turns
# it into a failure (exit status 3):
#  - a user without userfaultfd: one line from the library, the summary says the program ran
#    UNMANAGED (the policy not applied) and why, the report lists it; --require-managed refuses
#    to start (nothing runs);
#  - a root run whose program drops to uid 65534 and execs (setpriv): its last program cannot
#    write the run's statistics; counted 0 managed, 1 unmanaged, with why; --require-managed
#    exits 3 after it;
#  - a static binary (no PT_INTERP, nothing preloads): detected before exec, reported unmanaged
#    ("static binary: LD_PRELOAD cannot load thpemu"), refused by --require-managed;
#  - the emulator stepping aside (a seccomp filter): listed, and exit 3 with --require-managed;
#  - a managed run with --require-managed keeps the program's status.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd setpriv
need_cmd cc

PROG="$THPEMU_BUILD_DIR/tests/programs/early_exit"
SECCOMP="$THPEMU_BUILD_DIR/tests/programs/seccomp_exec"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
pub=$(mktemp -d /tmp/thpemu-unmanaged.XXXXXX) # $T_TMP is private to root
at_exit "rm -rf '$pub'"
chmod 1777 "$pub"
MARK=$pub/ran

# 1. a user without userfaultfd (vm.unprivileged_userfaultfd=0, /dev/userfaultfd root's)
if [ "$(cat /proc/sys/vm/unprivileged_userfaultfd)" = 0 ] && ! as_nobody test -w /dev/userfaultfd; then
	as_nobody "$THPEMU" run --policy linux-3.2 --report "$pub/a.json" -- "$PROG" x 7 \
		2>"$T_TMP/err"
	expect_eq "nobody: status" "$?" 7
	grep -q "^thpemu: the program ran UNMANAGED: 0 processes managed, 1 unmanaged; policy linux-3.2 not applied" \
		"$T_TMP/err" || fail "nobody: summary: $(cat "$T_TMP/err")"
	grep -q "^thpemu: ran unmanaged: pid [0-9]* (early_exit): userfaultfd unavailable" "$T_TMP/err" ||
		fail "nobody: why: $(cat "$T_TMP/err")"
	expect_eq "nobody: report" "$(json "$pub/a.json" '.program.unmanaged[0] | "\(.how) \(.comm)"')" \
		"unmanaged early_exit"
	as_nobody "$THPEMU" run --require-managed -- touch "$MARK" 2>"$T_TMP/err"
	expect_eq "nobody, --require-managed: status" "$?" 3
	expect_eq "nobody, --require-managed: lines" "$(wc -l <"$T_TMP/err")" 1
	grep -q -- "--require-managed: userfaultfd unavailable to uid 65534.*not started" "$T_TMP/err" ||
		fail "nobody, --require-managed: $(cat "$T_TMP/err")"
	[ ! -e "$MARK" ] || fail "nobody, --require-managed: the program ran"
	say "no userfaultfd: the summary and the report say UNMANAGED and why; --require-managed refuses"
else
	say "uid 65534 may use userfaultfd here: the no-userfaultfd case is not checked"
fi

# 2. a root run whose program drops privileges and execs
"$THPEMU" run --report "$T_TMP/b.json" -- setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$PROG" x 0 2>"$T_TMP/err" || fail "setpriv: $(cat "$T_TMP/err")"
expect_eq "setpriv: managed" "$(json "$T_TMP/b.json" .program.processes)" 0
expect_eq "setpriv: unmanaged" "$(json "$T_TMP/b.json" .program.unmanaged_processes)" 1
json "$T_TMP/b.json" '.program.unmanaged[0].why' | grep -q "early_exit, ran as uid 65534" ||
	fail "setpriv: why: $(json "$T_TMP/b.json" .program.unmanaged)"
expect_eq "setpriv: the process" "$(json "$T_TMP/b.json" '.processes[0] | "\(.state) \(.comm) \(.exec_from)"')" \
	"unmanaged early_exit setpriv"
grep -q "^thpemu: ran unmanaged: pid [0-9]* (early_exit): its last program, early_exit, ran as uid 65534" \
	"$T_TMP/err" || fail "setpriv: summary: $(cat "$T_TMP/err")"
"$THPEMU" run --quiet --require-managed -- setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$PROG" x 0 2>"$T_TMP/err"
expect_eq "setpriv, --require-managed: status" "$?" 3
grep -v "^thpemu: userfaultfd unavailable" "$T_TMP/err" >"$T_TMP/err2" # the library's line
expect_eq "setpriv, --require-managed: lines" "$(wc -l <"$T_TMP/err2")" 1
grep -q -- "--require-managed: pid [0-9]* (early_exit) ran unmanaged: its last program" "$T_TMP/err2" ||
	fail "setpriv, --require-managed: $(cat "$T_TMP/err2")"
say "a program that drops to uid 65534: 0 managed, 1 unmanaged, and why; --require-managed: 3"

# 3. a static binary
printf '#include <fcntl.h>\n#include <unistd.h>\nint main(int c, char **v) { if (c > 1) close(open(v[1], O_CREAT | O_WRONLY, 0644)); return 4; }\n' \
	>"$T_TMP/static.c"
cc -static -o "$T_TMP/static" "$T_TMP/static.c" || fail "cannot build a static program"
"$THPEMU" run --report "$T_TMP/c.json" -- "$T_TMP/static" 2>"$T_TMP/err"
expect_eq "static: status" "$?" 4
grep -q "static is a static binary: LD_PRELOAD cannot load thpemu; it runs unmanaged" "$T_TMP/err" ||
	fail "static: no word before: $(cat "$T_TMP/err")"
grep -q "^thpemu: ran unmanaged: pid [0-9]* (static): static binary: LD_PRELOAD cannot load thpemu" \
	"$T_TMP/err" || fail "static: summary: $(cat "$T_TMP/err")"
expect_eq "static: report" "$(json "$T_TMP/c.json" '"\(.program.unmanaged_processes) \(.processes[0].state) \(.processes[0].note)"')" \
	"1 unmanaged static binary: LD_PRELOAD cannot load thpemu"
rm -f "$MARK"
"$THPEMU" run --require-managed -- "$T_TMP/static" "$MARK" 2>"$T_TMP/err"
expect_eq "static, --require-managed: status" "$?" 3
expect_eq "static, --require-managed: lines" "$(wc -l <"$T_TMP/err")" 1
grep -q "is a static binary: LD_PRELOAD cannot load thpemu, it would run unmanaged; not started" \
	"$T_TMP/err" || fail "static, --require-managed: $(cat "$T_TMP/err")"
[ ! -e "$MARK" ] || fail "static, --require-managed: the program ran"
say "a static binary: reported unmanaged; --require-managed refuses it"

# 4. the emulator steps aside (a seccomp filter)
"$THPEMU" run --quiet --require-managed --report "$T_TMP/d.json" -- "$SECCOMP" --in-process 0 \
	>/dev/null 2>"$T_TMP/err"
expect_eq "stepped aside, --require-managed: status" "$?" 3
grep -q -- "--require-managed: pid [0-9]* (seccomp_exec) was stepped aside from: .*seccomp" "$T_TMP/err" ||
	fail "stepped aside: $(cat "$T_TMP/err")"
expect_eq "stepped aside: report" "$(json "$T_TMP/d.json" '"\(.program.stepped_aside_processes) \(.program.unmanaged[0].how)"')" \
	"1 stepped_aside"

# 5. managed: --require-managed changes nothing
"$THPEMU" run --quiet --require-managed -- "$PROG" x 5
expect_eq "managed, --require-managed: the program's status" "$?" 5
"$THPEMU" run --help | grep -q -- "--require-managed" || fail "--help lacks --require-managed"
"$THPEMU" run --help | grep -q "3 with --require-managed" || fail "--help: exit status 3"
say "ok"
