#!/usr/bin/env bash
# thpemu run forwards SIGTERM/SIGINT to the program, returns 128+signal and still reports.
# (A script's background commands start with SIGINT ignored, the program included, natively
# and under thpemu run: env --default-signal gives them the default back.)
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq

for sig in TERM INT; do
	rep="$T_TMP/$sig.json"
	env --default-signal=INT "$THPEMU" run --quiet --report "$rep" -- "$USEMEM" --size 8M \
		--hold 60s --quiet &
	pid=$!
	sleep 1
	kill -$sig $pid
	t0=$(date +%s)
	wait $pid
	rc=$?
	want=$((128 + $(kill -l $sig)))
	expect_eq "SIG$sig status" "$rc" "$want"
	[ $(($(date +%s) - t0)) -le 5 ] || fail "SIG$sig took too long"
	expect_eq "SIG$sig report status" "$(json "$rep" .program.exit_status)" "$want"
	say "SIG$sig: status $rc, report with $(json "$rep" .faults.total) faults"
done
