#!/usr/bin/env bash
# fork() children read exactly their parent's data at fork time, whatever migration was in
# flight. A migration moves the page out of the program's mapping, copies it and maps it back;
# a child forked in between used to read a page of zeros (7 in ~10 000 verifications in the
# issue's reproducer). core/inprocess makes a fork wait for migrations in flight and keeps new ones
# from starting until it is done.
# fork_verify's children check every page of a 32 MiB area (half-empty pageblocks: compaction
# keeps migrating its pages) while churn threads make the emulated kernel compact. Twice: as
# is, and with THPEMU_TEST_MIGRATE_GAP widening the window to 200 us (with the gate removed,
# the same run without the gate finds 2-3 zero pages every time: 6 of 6 runs).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/fork_verify"
verifications=${THPEMU_FORK_VERIFICATIONS:-200000}

run() { # run NAME [ENV...]
	local name=$1
	shift
	env "$@" "$THPEMU" run --quiet --policy linux-3.2 --pool 64M --report "$T_OUT/$name.json" -- \
		"$PROG" "$verifications" 32 2 0 >"$T_TMP/$name.out" 2>&1 ||
		fail "$name: $(cat "$T_TMP/$name.out")"
	grep -q ' bad_pages=0 zero_pages=0 ' "$T_TMP/$name.out" || fail "$name: $(cat "$T_TMP/$name.out")"
	migrated=$(json "$T_OUT/$name.json" .host.anon_migrations)
	[ "$migrated" -gt 0 ] || fail "$name: no page was migrated: not a test"
	say "$name: $(cat "$T_TMP/$name.out"); $migrated migrations," \
		"$(json "$T_OUT/$name.json" .host.fork_deferred) deferred for a fork"
}
run plain
run widened THPEMU_TEST_MIGRATE_GAP=200us
