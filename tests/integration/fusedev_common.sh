# Helpers for the fusedev integration tests and benchmark (sourced, not a test).
# fd_mount MNT ARGS...  mounts thpemu-fusedev in the foreground and waits for --ready-fd;
# the daemon's stderr goes to $T_OUT/fusedev.log; cleanup (TERM, then lazy unmount) at exit.
. "$(dirname "$0")/../integration/lib.sh"

FDIO="$THPEMU_BUILD_DIR/fusedev_io"
FD_PID=""

# is_mounted DIR: mounted, alive or dead (mountpoint(1) fails on a dead FUSE mount: ENOTCONN)
is_mounted() { awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }

fd_umount() { # fd_umount MNT PID
	local mnt=$1 pid=$2 i
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if is_mounted "$mnt"; then fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"; fi
	return 0
}

fd_mount() { # fd_mount MNT ARGS...
	local mnt=$1 line=""
	shift
	mkdir -p "$mnt"
	rm -f "$T_TMP/ready"
	mkfifo "$T_TMP/ready"
	"$FUSEDEV" "$mnt" --foreground --ready-fd 3 "$@" 3>"$T_TMP/ready" 2>>"$T_OUT/fusedev.log" &
	FD_PID=$!
	at_exit "fd_umount '$mnt' $FD_PID"
	read -r -t 20 line <"$T_TMP/ready" || true
	[ "$line" = ready ] || fail "fusedev did not become ready: $(tail -n 3 "$T_OUT/fusedev.log")"
}

fd_stat() { jq -r "$2" "$1/.thpemu-stats"; } # fd_stat MNT JQ-FILTER
fd_ctl() { printf '%s\n' "$2" >"$1/.thpemu-control"; } # fd_ctl MNT LINE
# kv LINE KEY: the value of KEY in fusedev_io's "key=value ..." output
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# fcmp A OP B: numeric comparison of two numbers through awk (no expressions: awk would
# compare a non-numeric string as a string)
fcmp() { awk -v a="$1" -v b="$3" "BEGIN { exit !(a + 0 $2 b + 0) }"; }

need_root
need_fuse
need_cmd jq
[ -x "$FUSEDEV" ] || fail "$FUSEDEV not built"
[ -x "$FDIO" ] || fail "$FDIO not built"
