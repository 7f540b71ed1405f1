#!/usr/bin/env bash
# Managed shared memory after its first touch (core/live/shmem.c, core/mm/shmem.c
# mm_shmem_punch), data checked by the program in every case (tests/integration/programs/
# shmem_hole.c), counters from the report:
#   - a hole punched by a fork child's fallocate(FALLOC_FL_PUNCH_HOLE) over a whole 2 MiB
#     folio, MADV_REMOVE of 64 KiB inside another (the THP split: 6.12 mm/truncate.c
#     truncate_inode_partial_folio -> split_folio) and ftruncate of the last 2 MiB free their
#     frames; the hole's next touch is a first touch again (a new THP where the range is empty,
#     4 KiB pages inside the split folio);
#   - mremap of a memfd mapping (growth, a move to a fixed address, a shrink): the faults at
#     the new place are the object's, served under the policy, across a fork;
#   - MADV_REMOVE on a MAP_SHARED anonymous mapping.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
P="$THPEMU_BUILD_DIR/tests/programs/shmem_hole"
ALWAYS="thp-never/never:shmem-enabled=always"

run() { # NAME POLICY MODE: the program under thpemu (lib.sh's run_report)
	run_report "$1" "$2" --pool 256M -- "$P" "$3"
	grep -q "^ok $3\$" "$T_OUT/$1.out" || fail "$1: $(cat "$T_OUT/$1.out")"
}
r() { jq -r "$2" "$T_OUT/$1.json"; }

# natively first: the program's own checks hold without thpemu
for m in punch remap anon; do
	"$P" "$m" >"$T_TMP/out" || fail "native $m: $(cat "$T_TMP/out")"
done

run punch "$ALWAYS" punch
# 4 THPs, the punched one allocated again at its next touch
expect_eq "punch: thp_file_alloc" "$(r punch .vmstat.thp_file_alloc)" 5
# MADV_REMOVE inside the third THP split it; its 16 pages came back as 4 KiB pages
expect_eq "punch: thp_split_page" "$(r punch .vmstat.thp_split_page)" 1
expect_eq "punch: 4 KiB first touches (the hole in the split THP)" "$(r punch .host.shmem_base)" 16
# 512 (fallocate) + 16 (MADV_REMOVE) + 512 (ftruncate to 6 MiB)
expect_eq "punch: frames punched" "$(r punch .host.shmem_pages_punched)" 1040
# a memfd's frames stay until the machine ends (core/live/README.md): 6 MiB of them, 4 MiB
# of it in two THPs
expect_eq "punch: shmem frames at the end" "$(r punch .host.pool.shmem)" 1536
expect_eq "punch: of which in THPs" "$(r punch .host.pool.shmem_huge)" 1024
say "punch: $(r punch '.host | {shmem_faults, shmem_huge, shmem_base, shmem_cached, shmem_pages_punched}' | tr -d ' \n')"

run remap "$ALWAYS" remap
# every 2 MiB of the object a THP, wherever the mapping was when it was first touched
expect_eq "remap: thp_file_alloc" "$(r remap .vmstat.thp_file_alloc)" 4
expect_eq "remap: huge decisions" "$(r remap .host.shmem_huge)" 4
expect_eq "remap: mremaps followed" "$(r remap .host.shmem_remaps)" 3
expect_eq "remap: pages delivered" "$(r remap .host.shmem_pages)" 2048
expect_eq "remap: no orphan mapping" "$(r remap .host.unmanaged_maps)" 0
say "remap: $(r remap '.host | {shmem_maps, shmem_faults, shmem_huge, shmem_remaps, shmem_pages}' | tr -d ' \n')"

run anon "$ALWAYS" anon
expect_eq "anon: thp_file_alloc (the removed 2 MiB again)" "$(r anon .vmstat.thp_file_alloc)" 3
expect_eq "anon: frames punched" "$(r anon .host.shmem_pages_punched)" 512
expect_eq "anon: shmem frames at the end (gone with the mapping)" "$(r anon .host.pool.shmem)" 0
