#!/usr/bin/env bash
# Shared memory managed under the emulated shmem THP policy (core/live/shmem.c): a
# MAP_SHARED|MAP_ANONYMOUS mapping and a memfd shared by a parent and its fork child, a POSIX shm
# file and a SysV segment shared with a second program (fork + exec, which maps it by name or
# attaches it by id), data checked page by page in every case (SysV runs unmanaged: below). One
# set of frames per object whoever faults first: the machine's thp_file_alloc counts one
# PMD-size folio per 2 MiB of the object under shmem-enabled=always, none under never or a 3.x
# profile; advise needs MADV_HUGEPAGE; /dev/shm follows tmpfs-huge, not shmem-enabled. A huge
# decision is delivered as 512 PTEs (shmem_pages). The MAP_SHARED anonymous object's frames go
# back when its last mapping does. A memfd mapped MAP_FIXED into a PROT_NONE reservation the
# emulator manages is managed as shared memory too.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
P="$THPEMU_BUILD_DIR/tests/programs/shmem_share"

run() { # NAME POLICY ARGS...: the program under thpemu (lib.sh's run_report)
	run_report "$1" "$2" --pool 256M -- "$P" "${@:3}"
	grep -q "^ok $3 " "$T_OUT/$1.out" || fail "$1: $(cat "$T_OUT/$1.out")"
}
r() { jq -r "$2" "$T_OUT/$1.json"; }

# natively first: the program's own checks hold without thpemu
for m in anon memfd memfd-reserved posix sysv; do
	"$P" "$m" 8 >"$T_TMP/out" || fail "native $m: $(cat "$T_TMP/out")"
done

ALWAYS="thp-never/never:shmem-enabled=always"
run anon "$ALWAYS" anon 8
expect_eq "anon always: thp_file_alloc" "$(r anon .vmstat.thp_file_alloc)" 4
expect_eq "anon always: thp_file_fallback" "$(r anon .vmstat.thp_file_fallback)" 0
expect_eq "anon always: thp_fault_alloc (no anon THP)" "$(r anon .vmstat.thp_fault_alloc)" 0
expect_eq "anon always: huge decisions" "$(r anon '.host.shmem_huge')" 4
expect_eq "anon always: pages delivered by PTE" "$(r anon '.host.shmem_pages')" 2048
# the object went with its last mapping (the parent's munmap, or the host reaping the child
# after it): every frame back
expect_eq "anon always: shmem frames at the end" "$(r anon '.host.pool.shmem')" 0
expect_eq "anon always: free frames at the end" "$(r anon '.host.pool.free')" "$(r anon '.host.pool.frames')"
# both processes faulted (the parent its half, the child the other)
expect_eq "anon always: processes" "$(r anon '.program.processes')" 2
# thpemu report shows them
"$THPEMU" report "$T_OUT/anon.json" >"$T_TMP/report.txt" || fail "thpemu report"
grep -q "shared memory: 4 first touches: PMD-size folios 4, mTHP 0, 4 KiB 0" "$T_TMP/report.txt" ||
	fail "thpemu report: no shared memory line: $(grep -i shared "$T_TMP/report.txt")"
grep -q "thp_file_alloc 4 thp_file_fallback 0 thp_file_mapped 4; shmem frames at the end 0" \
	"$T_TMP/report.txt" || fail "thpemu report: no thp_file line"
say "anon always: $(r anon '.host | {shmem_maps, shmem_faults, shmem_huge, shmem_base, shmem_cached, shmem_pages}' | tr -d ' \n')"

run anon-never "thp-always/always" anon 8
expect_eq "anon never: thp_file_alloc" "$(r anon-never .vmstat.thp_file_alloc)" 0
expect_eq "anon never: base faults" "$(r anon-never '.host.shmem_base')" 2048
expect_eq "anon never: shmem frames at the end" "$(r anon-never '.host.pool.shmem')" 0

run anon-advise "thp-never/never:shmem-enabled=advise" anon 8
expect_eq "advise without MADV_HUGEPAGE" "$(r anon-advise .vmstat.thp_file_alloc)" 0
run anon-advised "thp-never/never:shmem-enabled=advise" anon 8 huge
expect_eq "advise with MADV_HUGEPAGE" "$(r anon-advised .vmstat.thp_file_alloc)" 4

run anon-32 "linux-3.2" anon 8
expect_eq "3.2: no shmem THP" "$(r anon-32 .vmstat.thp_file_alloc)" 0
expect_eq "3.2: base faults" "$(r anon-32 '.host.shmem_base')" 2048

run anon-61 "linux-6.1:shmem-enabled=within_size" anon 8
expect_eq "6.1 within_size" "$(r anon-61 .vmstat.thp_file_alloc)" 4

run memfd "$ALWAYS" memfd 8
expect_eq "memfd always: thp_file_alloc" "$(r memfd .vmstat.thp_file_alloc)" 4
expect_eq "memfd always: maps (parent, inherited by the child)" "$(r memfd '.host.shmem_maps')" 1
# a file outlives its mappings: its frames stay until the machine ends (core/live/README.md)
expect_eq "memfd always: shmem frames at the end" "$(r memfd '.host.pool.shmem')" 2048

# shared memory placed into a reservation the emulator manages (MAP_FIXED over PROT_NONE)
run memfd-reserved "$ALWAYS" memfd-reserved 8
expect_eq "memfd in a reservation: maps" "$(r memfd-reserved '.host.shmem_maps')" 1
expect_eq "memfd in a reservation: thp_file_alloc" "$(r memfd-reserved .vmstat.thp_file_alloc)" 4

run posix "$ALWAYS" posix 8
expect_eq "posix under shmem-enabled only: /dev/shm has no huge=" "$(r posix .vmstat.thp_file_alloc)" 0
expect_eq "posix: both programs mapped it" "$(r posix '.host.shmem_maps')" 2
run posix-huge "thp-never/never:tmpfs-huge=always" posix 8
expect_eq "posix under tmpfs-huge=always" "$(r posix-huge .vmstat.thp_file_alloc)" 4
# the exec'd peer found the parent's pages cached (its half was its own first touches)
expect_eq "posix: one set of frames (faults = 4 huge)" "$(r posix-huge '.host.shmem_huge')" 4
say "posix-huge: $(r posix-huge '.host | {shmem_maps, shmem_faults, shmem_huge, shmem_cached, shmem_pages}' | tr -d ' \n')"

# SysV shm cannot be registered (ipc/shm.c maps a segment with shm_vm_ops, not shmem's: 6.12
# include/linux/userfaultfd_k.h vma_can_userfault -> vma_is_shmem is false, UFFDIO_REGISTER
# EINVAL): it runs unmanaged, its data intact
run sysv "$ALWAYS" sysv 8
expect_eq "sysv: not managed" "$(r sysv '.host.shmem_maps')" 0
expect_eq "sysv: no shmem THP counted" "$(r sysv .vmstat.thp_file_alloc)" 0
