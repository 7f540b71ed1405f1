#!/usr/bin/env bash
# A workload's file in the emulated pool: under `thpemu run --device fast`, thpscale and
# thpcompact write their file on the run's own device (thpemu-fusedev joined to the machine,
# $THPEMU_DEVICE_DIR), so its pages are page-cache frames of the pool, as a guest's tmpfs file
# is page cache in the guest's memory (thpemu fidelity's thpemu side for these workloads).
# With --fs tmpfs (tmpfs without swap) they are never dirty, never written back and never
# reclaimed, and they are shmem (nr_shmem); with ext4 they are dirty and the device writes them
# back. Without a device the file goes to the host's /tmp, outside the pool.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
need_cmd jq

WL="$THPEMU_BUILD_DIR/thpemu-wl"
export TMPDIR=$T_TMP
export ORACLE_COUNTERS=1 # the phase's snap lines: the emulated machine's counters

# at_phase OUT NAME: the emulated machine's NAME where the workload's phase begins
at_phase() { sed -n "s/^ORACLE snap phase-begin vmstat $2 //p" "$1"; }

# file_pages OUT: the file's bytes from the info line, in 4 KiB pages
file_pages() { echo $(($(sed -n 's/^ORACLE info .* file_bytes=\([0-9]*\) .*/\1/p' "$1") / 4096)); }
# file_dir OUT
file_dir() { sed -n 's/^ORACLE info .* file_dir=\([^ ]*\) .*/\1/p' "$1"; }

# thpscale: 32 MiB of anon, holes of 16 MiB, a file of 8 MiB (2 048 pages), fdatasync'd
run_report scale thp-always/always --pool 96M --device fast --fs tmpfs -- "$WL" thpscale --anon 32M
n=$(file_pages "$T_OUT/scale.out")
expect_eq "thpscale's file pages" "$n" 2048
case "$(file_dir "$T_OUT/scale.out")" in
"$T_TMP"/thpemu-run.*/dev) ;;
*) fail "thpscale's file is not on the run's device: $(file_dir "$T_OUT/scale.out")" ;;
esac
expect_eq "file pages in the pool at the phase" "$(at_phase "$T_OUT/scale.out" nr_file_pages)" "$n"
# tmpfs pages are shmem, as the guest's /tmp file counts in its nr_shmem
expect_eq "tmpfs: the file's pages are shmem" "$(at_phase "$T_OUT/scale.out" nr_shmem)" "$n"
expect_eq "pages written through the machine" \
	"$(json "$T_OUT/scale.json" .program.machine.writers.pages_dirtied)" "$n"
# tmpfs: nothing dirty, nothing under writeback, nothing reclaimed, the fdatasync a no-op
expect_eq "tmpfs: dirty at the phase" "$(at_phase "$T_OUT/scale.out" nr_dirty)" 0
expect_eq "tmpfs: dirty pages seen" "$(json "$T_OUT/scale.json" .program.machine.writers.dirty_max)" 0
expect_eq "tmpfs: under writeback" "$(json "$T_OUT/scale.json" .program.machine.writers.writeback_max)" 0
expect_eq "tmpfs: reclaimed" "$(json "$T_OUT/scale.json" '.vmstat.pgsteal_direct + .vmstat.pgsteal_kswapd')" 0
expect_eq "the check of the machine" "$(json "$T_OUT/scale.json" .program.machine.check)" ok

# thpcompact: 4 threads, a 4 MiB share each, a quarter of it written and read: 4 MiB
run_report compact thp-always/always --pool 96M --device fast --fs tmpfs -- \
	"$WL" thpcompact --anon 16M
n=$(file_pages "$T_OUT/compact.out")
expect_eq "thpcompact's file pages" "$n" 1024
expect_eq "thpcompact: file pages in the pool at the phase" \
	"$(at_phase "$T_OUT/compact.out" nr_file_pages)" "$n"

# ext4: the same file is dirty page cache the device writes back (thpscale's fdatasync)
run_report ext4 thp-always/always --pool 96M --device fast --fs ext4 -- "$WL" thpscale --anon 32M
expect_eq "ext4: file pages in the pool at the phase" "$(at_phase "$T_OUT/ext4.out" nr_file_pages)" 2048
expect_eq "ext4: no shmem" "$(at_phase "$T_OUT/ext4.out" nr_shmem)" 0
[ "$(json "$T_OUT/ext4.json" .program.machine.writers.dirty_max)" -gt 0 ] ||
	fail "ext4: no dirty page seen"
expect_eq "ext4: the fdatasync" "$(json "$T_OUT/ext4.json" .program.machine.writers.fsyncs)" 1

# no device: the file is the host's, the pool holds none of it
run_report nodev thp-always/always --pool 96M -- "$WL" thpscale --anon 32M
expect_eq "no device: the file's directory" "$(file_dir "$T_OUT/nodev.out")" "$T_TMP"
expect_eq "no device: file pages in the pool" "$(at_phase "$T_OUT/nodev.out" nr_file_pages)" 0
expect_eq "no device: no shmem" "$(at_phase "$T_OUT/nodev.out" nr_shmem)" 0
say "ok"
