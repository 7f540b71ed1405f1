#!/usr/bin/env bash
# Bad options and unusable mount points: exit status 2 and one line on stderr naming the
# option (or the mount point) and what is accepted. --help and --version exit 0.
. "$(dirname "$0")/fusedev_common.sh"

MNT=$T_TMP/mnt
mkdir -p "$MNT"

bad() { # bad PATTERN ARGS...: expect exit 2 and one stderr line matching PATTERN
	local pat=$1 rc
	shift
	"$FUSEDEV" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	[ "$rc" = 2 ] || fail "'$*' exited $rc, want 2 (stderr: $(cat "$T_TMP/err"))"
	[ "$(wc -l <"$T_TMP/err")" = 1 ] || fail "'$*' printed $(wc -l <"$T_TMP/err") lines: $(cat "$T_TMP/err")"
	grep -q -- "$pat" "$T_TMP/err" || fail "'$*': '$(cat "$T_TMP/err")' does not match '$pat'"
	is_mounted "$MNT" && fail "'$*' mounted something"
	return 0
}

bad "--bandwidth: expected 0 (unthrottled) or 10KB/s..1TB/s, got 'fast'" "$MNT" --bandwidth fast
bad "--latency: expected 0..10s, got '5'" "$MNT" --latency 5
bad "--jitter: expected 0..100% or 0..1, got '150%'" "$MNT" --jitter 150%
bad "--slots: expected 1..64, got" "$MNT" --slots 0
bad "--slots: expected 1..64, got" "$MNT" --slots 65
bad "--stall-every: needs --stall-for" "$MNT" --stall-every 4M
bad "--stall-every: expected 0 (off), 64K..1T written or 10ms..1h busy" "$MNT" --stall-every often --stall-for 1s
bad "--error-rate: expected 0..100% or 0..1, got '2'" "$MNT" --error-rate 2
bad "--capacity: expected a size" "$MNT" --capacity lots
bad "--store: expected memory, discard or an existing directory" "$MNT" --store "$T_TMP/nope"
bad "--cache: expected auto, direct or writeback" "$MNT" --cache sometimes
bad "--reads: expected model or instant" "$MNT" --reads never
bad "--preset: unknown preset 'floppy' (one of: usb2-stick-2011" "$MNT" --preset floppy
bad "--set: unknown device key" "$MNT" --set colour=blue
bad "--set: expected KEY=VALUE" "$MNT" --set bandwidth
bad "--seed: expected an integer" "$MNT" --seed -1
bad "--threads: expected an integer in 1..64" "$MNT" --threads 0
bad "--ready-fd: not an open file descriptor" "$MNT" --ready-fd 97
bad "unknown option '--frobnicate'" "$MNT" --frobnicate
bad "missing value for '--preset'" "$MNT" --preset
bad "expected one MOUNTPOINT, got 0" --preset fast
bad "expected one MOUNTPOINT, got 2" "$MNT" "$T_TMP"
bad "mount point does not exist" "$T_TMP/missing"
touch "$T_TMP/file"
bad "mount point is not a directory" "$T_TMP/file"
mkdir -p "$T_TMP/busy"
mount -t tmpfs none "$T_TMP/busy" || fail "cannot mount a tmpfs to occupy a mount point"
at_exit "umount -l '$T_TMP/busy'"
bad "something is already mounted there" "$T_TMP/busy"
umount "$T_TMP/busy"
# no /dev/fuse: a private mount namespace with an empty /dev
if command -v unshare >/dev/null; then
	unshare -m sh -c "mount -t tmpfs none /dev && exec '$FUSEDEV' '$MNT' --preset fast" \
		>"$T_TMP/out" 2>"$T_TMP/err"
	expect_eq "exit without /dev/fuse" $? 2
	grep -q "^thpemu-fusedev: /dev/fuse: No such file or directory" "$T_TMP/err" ||
		fail "no /dev/fuse: $(cat "$T_TMP/err")"
else
	say "unshare not installed: /dev/fuse check not exercised"
fi

"$FUSEDEV" --help >"$T_TMP/help" || fail "--help failed"
grep -q "usb2-stick-2011" "$T_TMP/help" || fail "--help does not list presets"
grep -q "stall-every" "$T_TMP/help" || fail "--help does not list device keys"
"$FUSEDEV" --version | grep -q "^thpemu-fusedev " || fail "--version"
say "ok"
