#!/usr/bin/env bash
# Data read back equals what was written (memory and directory stores, O_DIRECT and buffered,
# odd sizes), the namespace works, hidden control files, ENOSPC at capacity, and the
# directory store persists across a remount.
. "$(dirname "$0")/fusedev_common.sh"

MNT=$T_TMP/mnt
io() { "$FDIO" "$@" || fail "fusedev_io $*"; }

check_files() { # check_files DIR: write and verify through the mount
	local d=$1
	io write "$d/direct" 32M --direct --qd 8 --bs 1M --seed 3 >/dev/null
	io verify "$d/direct" 32M --seed 3 >/dev/null
	io verify "$d/direct" 32M --seed 3 --direct >/dev/null
	io write "$d/odd" 5243003 --bs 65536 --presize none --seed 4 >/dev/null
	io verify "$d/odd" 5243003 --seed 4 --bs 65536 >/dev/null
	expect_eq "odd size" "$(stat -c %s "$d/odd")" 5243003
	head -c 3000000 /dev/urandom >"$T_TMP/rnd"
	cp "$T_TMP/rnd" "$d/copy"
	cmp "$T_TMP/rnd" "$d/copy" || fail "cp through the mount differs"
}

check_namespace() {
	local d=$1
	mkdir -p "$d/a/b" && echo hi >"$d/a/b/f" && mv "$d/a/b/f" "$d/a/g" || fail "mkdir/mv"
	expect_eq "moved" "$(cat "$d/a/g")" hi
	[ ! -e "$d/a/b/f" ] || fail "rename left the source"
	rmdir "$d/a/b" && rm "$d/a/g" && rmdir "$d/a" || fail "rm/rmdir"
	! rmdir "$d" 2>/dev/null || fail "rmdir of the mount root succeeded"
	truncate -s 1G "$d/sparse" && expect_eq "truncate" "$(stat -c %s "$d/sparse")" 1073741824
	truncate -s 10 "$d/sparse" && expect_eq "shrink" "$(stat -c %s "$d/sparse")" 10
	fallocate -l 2M "$d/falloc" && expect_eq "fallocate" "$(stat -c %s "$d/falloc")" 2097152
	ls -a "$d" | grep -q thpemu && fail "control files are listed by readdir"
	jq -e .bytes_written "$d/.thpemu-stats" >/dev/null || fail "stats is not JSON"
	grep -q '^bandwidth=' "$d/.thpemu-control" || fail "control does not show the settings"
	! { echo x >"$d/.thpemu-stats"; } 2>/dev/null || fail "stats file is writable"
}

# memory store
fd_mount "$MNT" --preset fast --capacity 256M
check_files "$MNT"
check_namespace "$MNT"
df -B1 "$MNT" | awk 'NR == 2 { exit !($2 == 268435456) }' || fail "df does not show the capacity"
fd_umount "$MNT" "$FD_PID"

# ENOSPC at capacity
fd_mount "$MNT" --preset fast --capacity 8M
out=$("$FDIO" write "$MNT/full" 16M --bs 1M --presize none) && fail "16M fit in 8M: $out"
expect_eq "write beyond capacity" "$(kv "$out" error)" ENOSPC
[ "$(fd_stat "$MNT" .enospc)" -ge 1 ] || fail "stats do not count ENOSPC"
rm "$MNT/full"
io write "$MNT/fits" 6M --bs 1M --presize none >/dev/null
fd_umount "$MNT" "$FD_PID"

# directory store: the same, then the data is in the directory and survives a remount
STORE=$T_TMP/store
mkdir -p "$STORE"
fd_mount "$MNT" --preset fast --store "$STORE"
check_files "$MNT"
check_namespace "$MNT"
mkdir "$MNT/dir" && io write "$MNT/dir/deep" 3M --bs 1M --seed 9 >/dev/null
fd_umount "$MNT" "$FD_PID"
io verify "$STORE/direct" 32M --seed 3 >/dev/null
io verify "$STORE/dir/deep" 3M --seed 9 >/dev/null
cmp "$T_TMP/rnd" "$STORE/copy" || fail "backing file differs"
fd_mount "$MNT" --preset fast --store "$STORE"
io verify "$MNT/direct" 32M --seed 3 >/dev/null
io verify "$MNT/dir/deep" 3M --seed 9 >/dev/null
say "ok"
