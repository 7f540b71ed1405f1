/* Shared memory managed through userfaultfd: MAP_SHARED anonymous mappings, memfds and other
 * tmpfs files (POSIX shm in /dev/shm) mapped shared, under the emulated shmem THP policy.
 *
 * Registered in MISSING mode on the process's userfaultfd like a private region; the kernel
 * sends a message only for a page not in the object's page cache (mm/shmem.c
 * shmem_get_folio_gfp: userfaultfd_missing), that is the first touch of the page by any process
 * of the object. The handler asks mm (mm_shmem_fault) for the object's page, which allocates
 * the folio the era would (or finds the page cached by another process's fault: -EEXIST), and
 * fills the folio's pages of this mapping with UFFDIO_COPY of zeros: PTEs, so a huge or mTHP
 * decision is delivered page by page (UFFDIO_MOVE takes anonymous VMAs only: mm/userfaultfd.c
 * move_pages). The copy puts the pages in the object's page cache, where every other process
 * finds them with no message. A page already in the page cache (another process's copy won
 * the race) answers -EEXIST and is left as it is: data is never overwritten.
 *
 * khugepaged and MADV_COLLAPSE reach the mappings here (uffd_shmem_next_range, walked with the
 * private regions by collapse.c): the collapse is the emulated page cache's (core/mm shmem.c
 * shmem_collapse_range: one PMD-size folio takes the range's index entries, the old frames go
 * back); the host's pages stay where they are, data untouched (no UFFDIO_MOVE for shmem).
 *
 * One emulated set of frames per object on the machine: the object's identity (a file's device
 * and inode; a MAP_SHARED anonymous mapping has none and is its own object, inherited by fork
 * children) maps to mm's object id in the machine's table (core/machine: machine_shmem_*), which
 * also records which processes map it. A MAP_SHARED anonymous object goes with its last
 * mapping: its frames are freed by the process that unmaps it last, or by the host when that
 * process dies (core/host/host.c release_shmem). A file (memfd, /dev/shm) outlives its
 * mappings, and whether its last descriptor is closed or its name unlinked is not seen: its
 * frames stay until the machine ends (core/live/README.md says why). Holes (MADV_REMOVE,
 * fallocate PUNCH_HOLE) and truncations free the frames the kernel frees (mm_shmem_punch);
 * mremap carries the mapping's entry to the new range and registers it again.
 *
 * Nothing on the fault path allocates, uses stdio or takes a lock the program can hold.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "inprocess/guard.h"
#include "util/clock.h"
#include "util/sys.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

#define SHMEM_TMPFS_MAGIC 0x01021994 /* include/uapi/linux/magic.h TMPFS_MAGIC */
#define UFFD_SHMEM_MAPS	  64
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

struct shmem_map {
	uintptr_t lo, hi; /* hi 0: a free entry */
	uint64_t pgoff;	  /* the file page mapped at lo */
	uint64_t i_size;  /* the object's size in pages when mapped */
	uint32_t object;  /* mm's object id (the machine table's) */
	uint8_t kind;	  /* enum mm_shmem_kind */
	uint8_t advice;	  /* enum mm_vma_advice (madvise on any part applies to the mapping) */
};

struct uffd_shmem {
	pthread_rwlock_t lock; /* the maps; readers: handlers; writers: mmap, munmap, madvise */
	struct shmem_map map[UFFD_SHMEM_MAPS];
	/* without a machine: the object table is the process's own */
	pthread_mutex_t objs_lock;
	struct machine_shmem objs[MACHINE_SHMEM_OBJECTS];
};

/* ---- the object table: the machine's, or this process's ------------------------------------ */

static struct machine_shmem *objs_lock(struct uffd_live *lv)
{
	if (lv->on_machine) {
		machine_lock(&lv->mach);
		return lv->mach.hdr->shmem;
	}
	pthread_mutex_lock(&lv->shmem->objs_lock);
	return lv->shmem->objs;
}

static void objs_unlock(struct uffd_live *lv)
{
	if (lv->on_machine)
		machine_unlock(&lv->mach);
	else
		pthread_mutex_unlock(&lv->shmem->objs_lock);
}

/* Object id is RELEASING: free its frames, then its entry. */
static void release_object(struct uffd_live *lv, uint32_t id)
{
	struct machine_shmem *tab;

	uffd_stat_add(&lv->stats->host.shmem_pages_released, mm_shmem_release(lv->mm, id));
	tab = objs_lock(lv);
	machine_shmem_released(tab, id);
	objs_unlock(lv);
}

/* This process no longer maps object id anywhere: the object goes if it was the last. */
static void object_unmapped(struct uffd_live *lv, uint32_t id)
{
	struct machine_shmem *tab = objs_lock(lv);
	bool release = machine_shmem_unmap(tab, id, lv->mslot);

	objs_unlock(lv);
	if (release)
		release_object(lv, id);
}

/* Does this process still map object id (maps lock held)? */
static bool still_mapped(const struct uffd_shmem *sh, uint32_t id)
{
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS; i++)
		if (sh->map[i].hi && sh->map[i].object == id)
			return true;
	return false;
}

/* ---- set-up ---------------------------------------------------------------------------------- */

/* whole pages: the emulator's arena hands out page-aligned ranges */
#define SHMEM_BYTES ((sizeof(struct uffd_shmem) + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1))

int uffd_shmem_init(struct uffd_live *lv)
{
	long p = guard_vm_map(SHMEM_BYTES, 0, 0, 0);
	struct uffd_shmem *sh;

	if (sys_is_err(p))
		return (int)p;
	sh = (struct uffd_shmem *)p;
	pthread_rwlock_init(&sh->lock, NULL);
	pthread_mutex_init(&sh->objs_lock, NULL);
	lv->shmem = sh;
	return 0;
}

void uffd_shmem_destroy(struct uffd_live *lv)
{
	if (!lv->shmem)
		return;
	guard_vm_unmap(lv->shmem, SHMEM_BYTES);
	lv->shmem = NULL;
}

/* ---- mmap, munmap, madvise ------------------------------------------------------------------ */

/* What kind of shmem fd is, with its identity; false if not shmem. */
static bool fd_shmem(int fd, enum mm_shmem_kind *kind, uint64_t *dev, uint64_t *ino, uint64_t *size)
{
	struct statfs sfs;
	struct stat st;
	char path[40], link[16];
	long n;

	if (sys_call2(SYS_fstatfs, fd, &sfs) < 0 || sfs.f_type != SHMEM_TMPFS_MAGIC)
		return false;
	if (sys_call2(SYS_fstat, fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	/* a memfd is a file of the internal mount (mm/memfd.c shmem_file_setup): its huge= is
	 * shmem_enabled; any other tmpfs file takes its own mount's (/dev/shm: tmpfs-huge) */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = sys_call4(SYS_readlinkat, AT_FDCWD, path, link, sizeof(link));
	*kind = n >= 7 && memcmp(link, "/memfd:", 7) == 0 ? MM_SHMEM_INTERNAL : MM_SHMEM_TMPFS;
	*dev = st.st_dev;
	*ino = st.st_ino;
	*size = ((uint64_t)st.st_size + UFFD_PAGE_SIZE - 1) / UFFD_PAGE_SIZE;
	return true;
}

bool uffd_shmem_eligible(const struct uffd_live *lv, size_t len, int prot, int flags, int fd)
{
	int type = flags & MAP_TYPE;

	if (!lv->shmem || lv->child || lv->detached || len < lv->cfg.min_region)
		return false;
	if ((type != MAP_SHARED && type != MAP_SHARED_VALIDATE) || (flags & MAP_HUGETLB) ||
	    prot != (PROT_READ | PROT_WRITE))
		return false;
	if (flags & MAP_ANONYMOUS)
		return true;
	if (fd < 0)
		return false;
	{
		enum mm_shmem_kind k;
		uint64_t d, i, s;

		return fd_shmem(fd, &k, &d, &i, &s);
	}
}

/* A 2 MiB aligned place for a mapping of len >= 2 MiB (the kernel's shmem_get_unmapped_area
 * aligns shmem for huge pages; without it no extent could be huge): reserve, then map over. */
static long map_shmem(void *addr, size_t len, int prot, int flags, int fd, long off)
{
	size_t over = len + UFFD_HPAGE_SIZE;
	uintptr_t start, aligned;
	long p;

	if (addr || (flags & MAP_FIXED) || len < UFFD_HPAGE_SIZE)
		return sys_mmap(addr, len, prot, flags, fd, off);
	p = sys_mmap(NULL, over, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sys_is_err(p))
		return sys_mmap(addr, len, prot, flags, fd, off);
	start = (uintptr_t)p;
	aligned = (start + UFFD_HPAGE_SIZE - 1) & ~(UFFD_HPAGE_SIZE - 1);
	p = sys_mmap((void *)aligned, len, prot, flags | MAP_FIXED, fd, off);
	if (sys_is_err(p)) {
		sys_munmap((void *)start, over);
		return p;
	}
	if (aligned > start)
		sys_munmap((void *)start, aligned - start);
	if (start + over > aligned + len)
		sys_munmap((void *)(aligned + len), start + over - (aligned + len));
	return p;
}

static void add_map(struct uffd_live *lv, struct shmem_map *mp, uint64_t dev, uint64_t ino,
		    bool anon);

/* The emulated VMA of mapping m, for mm. */
static struct mm_shmem_vma vma_of(const struct uffd_live *lv, const struct shmem_map *m)
{
	return (struct mm_shmem_vma){
	    .kind = (enum mm_shmem_kind)m->kind,
	    .advice = (enum mm_vma_advice)m->advice,
	    .thp_disable = (enum mm_thp_disable)__atomic_load_n(&lv->thp_disable, __ATOMIC_RELAXED),
	    .i_size_pages = m->i_size,
	};
}

/* khugepaged_enter_vma for mapping m (6.12 __mmap_region and hugepage_madvise call it). */
static void khugepaged_enter(struct uffd_live *lv, const struct shmem_map *m)
{
	struct mm_shmem_vma v = vma_of(lv, m);

	mm_khugepaged_enter_shmem(lv->mm, (uint32_t)lv->mslot, &v, m->pgoff);
}

/* The object a shared mapping of plen bytes maps: anonymous (shmem_zero_setup: an object of
 * the mapping's size, at offset 0) or a tmpfs file's. False for a file that is not shmem. */
static bool object_of(int flags, int fd, size_t plen, long *off, enum mm_shmem_kind *kind,
		      uint64_t *dev, uint64_t *ino, uint64_t *size)
{
	if (flags & MAP_ANONYMOUS) {
		*kind = MM_SHMEM_ANON;
		*size = plen / UFFD_PAGE_SIZE;
		*off = 0;
		*dev = *ino = 0;
		return true;
	}
	return fd_shmem(fd, kind, dev, ino, size);
}

/* Register [p, p + plen), just mapped, as a mapping of its object. */
static void adopt(struct uffd_live *lv, long p, size_t plen, int flags, long off,
		  enum mm_shmem_kind kind, uint64_t dev, uint64_t ino, uint64_t size)
{
	struct shmem_map m = {.advice = MM_VMA_DEFAULT};

	m.lo = (uintptr_t)p;
	m.hi = m.lo + plen;
	m.pgoff = (uint64_t)off / UFFD_PAGE_SIZE;
	m.i_size = size;
	m.kind = (uint8_t)kind;
	add_map(lv, &m, dev, ino, flags & MAP_ANONYMOUS);
	if (flags & MAP_POPULATE) /* through the emulator, as first touches */
		sys_madvise((void *)p, plen, MADV_POPULATE_WRITE);
}

long uffd_shmem_mmap(struct uffd_live *lv, void *addr, size_t len, int prot, int flags, int fd,
		     long off)
{
	uint64_t dev, ino, size;
	enum mm_shmem_kind kind;
	size_t plen = (len + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);
	long p;

	if (!object_of(flags, fd, plen, &off, &kind, &dev, &ino, &size))
		return sys_mmap(addr, len, prot, flags, fd, off);
	if (flags & MAP_FIXED)
		uffd_shmem_unmapped(lv, addr, plen);
	p = map_shmem(addr, plen, prot, flags & ~MAP_POPULATE, fd, off);
	if (!sys_is_err(p))
		adopt(lv, p, plen, flags, off, kind, dev, ino, size);
	return p;
}

void uffd_shmem_mapped_over(struct uffd_live *lv, long p, size_t len, int flags, int fd, long off)
{
	uint64_t dev, ino, size;
	enum mm_shmem_kind kind;
	size_t plen = (len + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);

	if (object_of(flags, fd, plen, &off, &kind, &dev, &ino, &size))
		adopt(lv, p, plen, flags, off, kind, dev, ino, size);
}

/* Register m (lo, hi, pgoff, i_size, kind set) for the object (dev, ino) or a new
 * anonymous one; left to the kernel when the tables are full or the kernel refuses. */
static void add_map(struct uffd_live *lv, struct shmem_map *mp, uint64_t dev, uint64_t ino,
		    bool anon)
{
	struct uffd_shmem *sh = lv->shmem;
	struct shmem_map m = *mp;
	struct machine_shmem *tab = objs_lock(lv);
	int id = machine_shmem_get(tab, dev, ino, anon, lv->mslot);

	objs_unlock(lv);
	if (id < 0 || uffd_io_register(lv->uffd, m.lo, m.hi - m.lo) < 0) {
		if (id > 0)
			object_unmapped(lv, (uint32_t)id);
		UFFD_COUNT(lv, unmanaged_maps);
		return;
	}
	m.object = (uint32_t)id;
	pthread_rwlock_wrlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS; i++) {
		if (!sh->map[i].hi) {
			sh->map[i] = m;
			m.hi = 0;
			break;
		}
	}
	pthread_rwlock_unlock(&sh->lock);
	if (m.hi) { /* no entry free: give the range back to the kernel */
		uffd_io_unregister(lv->uffd, m.lo, m.hi - m.lo);
		object_unmapped(lv, (uint32_t)id);
		UFFD_COUNT(lv, unmanaged_maps);
		return;
	}
	UFFD_COUNT(lv, shmem_maps);
	khugepaged_enter(lv, mp);
}

/* Forget [lo, hi) of this process's mappings (maps lock held): entries inside it go (their
 * objects in gone[], *ngone), entries across its ends are trimmed or cut in two. */
static void cut(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, uint32_t *gone, unsigned *ngone)
{
	struct uffd_shmem *sh = lv->shmem;

	for (unsigned i = 0; i < UFFD_SHMEM_MAPS; i++) {
		struct shmem_map *m = &sh->map[i];

		if (!m->hi || m->hi <= lo || m->lo >= hi)
			continue;
		if (lo <= m->lo && hi >= m->hi) {
			m->hi = 0;
			gone[(*ngone)++] = m->object;
		} else if (lo <= m->lo) { /* the head goes */
			m->pgoff += (hi - m->lo) / UFFD_PAGE_SIZE;
			m->lo = hi;
		} else if (hi >= m->hi) { /* the tail goes */
			m->hi = lo;
		} else { /* a hole in the middle: the tail becomes an entry of its own */
			struct shmem_map tail = *m;
			bool placed = false;

			tail.pgoff += (hi - m->lo) / UFFD_PAGE_SIZE;
			tail.lo = hi;
			m->hi = lo;
			for (unsigned j = 0; j < UFFD_SHMEM_MAPS && !placed; j++)
				if (!sh->map[j].hi)
					sh->map[j] = tail, placed = true;
			if (!placed) /* the tail's faults find no map: left to the kernel */
				uffd_io_unregister(lv->uffd, tail.lo, tail.hi - tail.lo);
		}
	}
}

/* The objects in gone[] this process no longer maps go (maps lock not held). */
static void forget_gone(struct uffd_live *lv, uint32_t *gone, unsigned ngone)
{
	pthread_rwlock_rdlock(&lv->shmem->lock);
	for (unsigned i = 0; i < ngone; i++)
		if (still_mapped(lv->shmem, gone[i]))
			gone[i] = 0;
	pthread_rwlock_unlock(&lv->shmem->lock);
	for (unsigned i = 0; i < ngone; i++)
		if (gone[i])
			object_unmapped(lv, gone[i]);
}

void uffd_shmem_unmapped(struct uffd_live *lv, void *addr, size_t len)
{
	struct uffd_shmem *sh = lv->shmem;
	uint32_t gone[UFFD_SHMEM_MAPS] = {0}; /* (filled up to ngone; zeroed for the analyzer) */
	unsigned ngone = 0;

	if (!sh || !len)
		return;
	pthread_rwlock_wrlock(&sh->lock);
	cut(lv, (uintptr_t)addr, (uintptr_t)addr + len, gone, &ngone);
	pthread_rwlock_unlock(&sh->lock);
	forget_gone(lv, gone, ngone);
}

bool uffd_shmem_madvise(struct uffd_live *lv, void *addr, size_t len, int advice, long *ret)
{
	struct uffd_shmem *sh = lv->shmem;
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;
	struct shmem_map advised[UFFD_SHMEM_MAPS];
	unsigned n = 0;
	int adv;

	if (!sh)
		return false;
	if (advice == MADV_COLLAPSE && uffd_shmem_overlaps(lv, lo, hi)) {
		*ret = uffd_shmem_madv_collapse(lv, lo, hi);
		return true;
	}
	if (advice != MADV_HUGEPAGE && advice != MADV_NOHUGEPAGE)
		return false;
	adv = advice == MADV_HUGEPAGE ? MM_VMA_HUGEPAGE : MM_VMA_NOHUGEPAGE;
	pthread_rwlock_wrlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS; i++) {
		if (sh->map[i].hi && sh->map[i].hi > lo && sh->map[i].lo < hi) {
			sh->map[i].advice = (uint8_t)adv;
			advised[n++] = sh->map[i];
		}
	}
	pthread_rwlock_unlock(&sh->lock);
	/* hugepage_madvise -> khugepaged_enter_vma */
	for (unsigned i = 0; i < n && adv == MM_VMA_HUGEPAGE; i++)
		khugepaged_enter(lv, &advised[i]);
	return false;
}

int uffd_shmem_next_range(struct uffd_live *lv, uint64_t *addr, struct mm_collapse_scan *scan)
{
	struct uffd_shmem *sh = lv->shmem;
	uintptr_t best = UINTPTR_MAX;
	struct shmem_map m = {0};

	if (!sh)
		return -ENOENT;
	pthread_rwlock_rdlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS; i++) {
		const struct shmem_map *c = &sh->map[i];
		uintptr_t start = *addr > c->lo ? (uintptr_t)*addr : c->lo;
		uintptr_t ea = (start + UFFD_HPAGE_SIZE - 1) & ~(uintptr_t)(UFFD_HPAGE_SIZE - 1);

		if (!c->hi || ea < start || ea + UFFD_HPAGE_SIZE > c->hi || ea >= best)
			continue;
		best = ea;
		m = *c;
	}
	pthread_rwlock_unlock(&sh->lock);
	if (best == UINTPTR_MAX)
		return -ENOENT;
	*addr = best;
	*scan = (struct mm_collapse_scan){.advice = (enum mm_vma_advice)m.advice};
	scan->shmem_object = m.object;
	scan->shmem_pgoff = m.pgoff;
	scan->shmem_index = m.pgoff + (best - m.lo) / UFFD_PAGE_SIZE;
	scan->shmem_vma = vma_of(lv, &m);
	scan->thp_disable = scan->shmem_vma.thp_disable;
	/* thp_vma_suitable_order: the address and the page index agree modulo 2 MiB */
	scan->vma_ok = scan->shmem_index % MM_HPAGE_NR == 0;
	return 0;
}

unsigned uffd_shmem_spans(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, uintptr_t (*out)[2],
			  unsigned max)
{
	struct uffd_shmem *sh = lv->shmem;
	unsigned n = 0;

	if (!sh)
		return 0;
	pthread_rwlock_rdlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS && n < max; i++) {
		const struct shmem_map *c = &sh->map[i];
		unsigned k = n;

		if (!c->hi || c->hi <= lo || c->lo >= hi)
			continue;
		for (; k > 0 && out[k - 1][0] > c->lo; k--) { /* in address order */
			out[k][0] = out[k - 1][0];
			out[k][1] = out[k - 1][1];
		}
		out[k][0] = c->lo > lo ? c->lo : lo;
		out[k][1] = c->hi < hi ? c->hi : hi;
		n++;
	}
	pthread_rwlock_unlock(&sh->lock);
	return n;
}

bool uffd_shmem_overlaps(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_shmem *sh = lv->shmem;
	bool hit = false;

	if (!sh)
		return false;
	pthread_rwlock_rdlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS && !hit; i++)
		hit = sh->map[i].hi && sh->map[i].hi > lo && sh->map[i].lo < hi;
	pthread_rwlock_unlock(&sh->lock);
	return hit;
}

/* A fork child joining the machine: it maps what its parent mapped (the same objects: a
 * MAP_SHARED mapping is shared, not copied); register them on its own userfaultfd. */
void uffd_shmem_forked(struct uffd_live *lv, const struct uffd_live *parent)
{
	const struct uffd_shmem *psh = parent->shmem;
	struct uffd_shmem *sh = lv->shmem;

	if (!psh || !sh || !lv->on_machine)
		return;
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS; i++) {
		struct shmem_map m = psh->map[i];
		struct machine_shmem *tab;

		if (!m.hi || uffd_io_register(lv->uffd, m.lo, m.hi - m.lo) < 0)
			continue;
		tab = objs_lock(lv);
		machine_shmem_map(tab, m.object, lv->mslot);
		objs_unlock(lv);
		pthread_rwlock_wrlock(&sh->lock);
		sh->map[i] = m;
		pthread_rwlock_unlock(&sh->lock);
	}
}

/* ---- holes, truncation, mremap ---------------------------------------------------------------
 *
 * The kernel frees the pages of a hole (fallocate FALLOC_FL_PUNCH_HOLE, MADV_REMOVE: 6.12
 * mm/madvise.c madvise_remove -> vfs_fallocate(PUNCH_HOLE | KEEP_SIZE) -> mm/shmem.c
 * shmem_fallocate -> shmem_truncate_range) and of a truncation (shmem_setattr ->
 * shmem_truncate_range(newsize, -1)); they leave the page cache, so their next touch is a
 * MISSING message again. After the kernel's call succeeded, mm frees the same frames
 * (mm_shmem_punch: the partial THP split as the kernel splits it). Any process's call counts,
 * through its mapping or a descriptor: the object is found by its (device, inode) in the table.
 * A fault of another process between the kernel's call and mm's may find the old frame
 * (-EEXIST) and fill the page anyway: its data is right, the page is then unaccounted. */

static void punch(struct uffd_live *lv, uint32_t id, uint64_t lstart, uint64_t lend)
{
	uffd_stat_add(&lv->stats->host.shmem_pages_punched,
		      mm_shmem_punch(lv->mm, id, lstart, lend));
}

/* The object of a tmpfs file given by descriptor (path NULL) or path; 0 if none is known. */
static uint32_t file_object(struct uffd_live *lv, int fd, const char *path)
{
	struct machine_shmem *tab;
	struct statfs sfs;
	struct stat st;
	int id;

	if (path ? sys_call2(SYS_statfs, (long)path, (long)&sfs) < 0
		 : sys_call2(SYS_fstatfs, fd, (long)&sfs) < 0)
		return 0;
	if (sfs.f_type != SHMEM_TMPFS_MAGIC)
		return 0;
	if (path ? sys_call4(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, 0) < 0
		 : sys_call2(SYS_fstat, fd, (long)&st) < 0)
		return 0;
	if (!S_ISREG(st.st_mode))
		return 0;
	tab = objs_lock(lv);
	id = machine_shmem_find(tab, st.st_dev, st.st_ino);
	objs_unlock(lv);
	return id > 0 ? (uint32_t)id : 0;
}

long uffd_shmem_remove(struct uffd_live *lv, void *addr, size_t len)
{
	struct uffd_shmem *sh = lv->shmem;
	uintptr_t lo = (uintptr_t)addr,
		  hi = lo + ((len + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1));
	struct {
		uint32_t object;
		uint64_t lstart, lend;
	} holes[UFFD_SHMEM_MAPS];
	unsigned n = 0;
	long rc;

	if (!sh || !len)
		return sys_madvise(addr, len, MADV_REMOVE);
	/* madvise_remove: each VMA's part, at its file offset (vm_pgoff) */
	pthread_rwlock_rdlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS; i++) {
		const struct shmem_map *m = &sh->map[i];
		uintptr_t a, b;

		if (!m->hi || m->hi <= lo || m->lo >= hi)
			continue;
		a = lo > m->lo ? lo : m->lo;
		b = hi < m->hi ? hi : m->hi;
		holes[n].object = m->object;
		holes[n].lstart = (m->pgoff + (a - m->lo) / UFFD_PAGE_SIZE) * UFFD_PAGE_SIZE;
		holes[n].lend = holes[n].lstart + (b - a) - 1;
		n++;
	}
	pthread_rwlock_unlock(&sh->lock);
	rc = sys_madvise(addr, len, MADV_REMOVE);
	for (unsigned i = 0; i < n && rc == 0; i++)
		punch(lv, holes[i].object, holes[i].lstart, holes[i].lend);
	return rc;
}

void uffd_shmem_fallocated(struct uffd_live *lv, int fd, int mode, long off, long len)
{
	uint32_t id;

	/* shmem_fallocate: PUNCH_HOLE (with KEEP_SIZE) frees; allocating puts pages in the page
	 * cache with no fault (not managed, as pages written with write(2)) */
	if (!lv->shmem || !(mode & FALLOC_FL_PUNCH_HOLE) || off < 0 || len <= 0)
		return;
	id = file_object(lv, fd, NULL);
	if (id)
		punch(lv, id, (uint64_t)off, (uint64_t)off + (uint64_t)len - 1);
}

void uffd_shmem_truncated(struct uffd_live *lv, int fd, const char *path, long size)
{
	struct uffd_shmem *sh = lv->shmem;
	uint32_t id;

	if (!sh || size < 0)
		return;
	id = file_object(lv, fd, path);
	if (!id)
		return;
	/* shmem_setattr -> shmem_truncate_range(inode, newsize, (loff_t)-1) */
	punch(lv, id, (uint64_t)size, UINT64_MAX);
	/* the new i_size for this process's later decisions (within_size) */
	pthread_rwlock_wrlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS; i++)
		if (sh->map[i].hi && sh->map[i].object == id)
			sh->map[i].i_size = ((uint64_t)size + UFFD_PAGE_SIZE - 1) / UFFD_PAGE_SIZE;
	pthread_rwlock_unlock(&sh->lock);
}

/* mremap (6.12 mm/mremap.c). A move drops the new VMA's registration (move_vma ->
 * fs/userfaultfd.c mremap_userfaultfd_prep -> userfaultfd_reset_ctx: no EVENT_REMAP), a growth
 * in place keeps it (vma_merge_extend extends the registered VMA): the new range is registered
 * again either way (the same context: allowed) and becomes the entry of the same object at the
 * same file offset. MREMAP_DONTUNMAP and a duplication (old_len 0) keep the old mapping. A
 * move the kernel may place keeps the file offset's 2 MiB phase, as shmem_get_unmapped_area
 * would for huge pages (the host's own setting may not). */

struct shmem_remap_args {
	void *old, *new_addr;
	size_t oldlen, newlen;
	int flags;
	uintptr_t phase;
};

static long shmem_remap_call(void *arg)
{
	struct shmem_remap_args *a = arg;
	long rc, res = 0, dst;
	size_t res_len = 0;

	if ((a->flags & MREMAP_FIXED) || !(a->flags & MREMAP_MAYMOVE) || !a->oldlen ||
	    a->newlen < UFFD_HPAGE_SIZE)
		return sys_mremap(a->old, a->oldlen, a->newlen, a->flags, a->new_addr);
	if (!(a->flags & MREMAP_DONTUNMAP)) { /* in place first, as the kernel tries */
		rc = sys_mremap(a->old, a->oldlen, a->newlen, 0, NULL);
		if (rc != -ENOMEM)
			return rc;
	}
	dst = uffd_reserve_phase(a->newlen, a->phase, &res, &res_len);
	if (sys_is_err(dst))
		return sys_mremap(a->old, a->oldlen, a->newlen, a->flags, a->new_addr);
	rc = sys_mremap(a->old, a->oldlen, a->newlen, a->flags | MREMAP_FIXED, (void *)dst);
	if (sys_is_err(rc)) {
		sys_munmap((void *)res, res_len);
		return sys_mremap(a->old, a->oldlen, a->newlen, a->flags, a->new_addr);
	}
	uffd_unreserve(res, res_len, (uintptr_t)dst, a->newlen);
	return rc;
}

long uffd_shmem_mremap(struct uffd_live *lv, void *old, size_t oldlen, size_t newlen, int flags,
		       void *new_addr)
{
	struct uffd_shmem *sh = lv->shmem;
	uintptr_t o = (uintptr_t)old;
	struct shmem_remap_args a = {old, new_addr, oldlen, newlen, flags, 0};
	struct shmem_map m = {0};
	uint32_t gone[2 * UFFD_SHMEM_MAPS + 1];
	unsigned ngone = 0;
	bool found = false, keep_old, placed = false;
	long rc;

	a.oldlen = (oldlen + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);
	a.newlen = (newlen + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);
	pthread_rwlock_rdlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS && !found; i++) {
		if (sh->map[i].hi && o >= sh->map[i].lo && o + a.oldlen <= sh->map[i].hi &&
		    o < sh->map[i].hi) {
			m = sh->map[i];
			found = true;
		}
	}
	pthread_rwlock_unlock(&sh->lock);
	if (!found || !a.newlen) /* across mappings: the kernel refuses or we cannot follow */
		return sys_mremap(old, oldlen, newlen, flags, new_addr);
	m.pgoff += (o - m.lo) / UFFD_PAGE_SIZE;
	a.phase = (uintptr_t)(m.pgoff * UFFD_PAGE_SIZE) & (UFFD_HPAGE_SIZE - 1);
	/* a fixed destination over managed private memory is unmapped there first */
	if ((flags & MREMAP_FIXED) && uffd_is_managed(lv, new_addr, a.newlen))
		rc = uffd_unmap_managed(lv, (uintptr_t)new_addr, (uintptr_t)new_addr + a.newlen,
					shmem_remap_call, &a);
	else
		rc = shmem_remap_call(&a);
	if (sys_is_err(rc))
		return rc;
	UFFD_COUNT(lv, shmem_remaps);
	keep_old = (flags & MREMAP_DONTUNMAP) || !a.oldlen;
	m.lo = (uintptr_t)rc;
	m.hi = m.lo + a.newlen;
	if (uffd_io_register(lv->uffd, m.lo, a.newlen) < 0)
		m.hi = 0;
	pthread_rwlock_wrlock(&sh->lock);
	if (!keep_old)
		cut(lv, o, o + a.oldlen, gone, &ngone);
	cut(lv, m.lo, m.lo + a.newlen, gone, &ngone); /* what the destination replaced */
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS && m.hi && !placed; i++) {
		if (!sh->map[i].hi) {
			sh->map[i] = m;
			placed = true;
		}
	}
	pthread_rwlock_unlock(&sh->lock);
	if (!placed) { /* not registered, or no entry free: the kernel serves it */
		if (m.hi)
			uffd_io_unregister(lv->uffd, m.lo, a.newlen);
		UFFD_COUNT(lv, unmanaged_maps);
		gone[ngone++] = m.object;
	}
	forget_gone(lv, gone, ngone);
	return rc;
}

/* ---- the fault ------------------------------------------------------------------------------- */

/* 6.12 thp_vma_suitable_order for each order 2..9: the aligned block around index is mapped
 * whole, at an address aligned to its size. */
static uint16_t suitable_orders(const struct shmem_map *m, uint64_t index)
{
	uint16_t ok = 0;

	for (unsigned k = MM_MTHP_MIN_ORDER; k <= MM_HPAGE_ORDER; k++) {
		uint64_t n = 1ULL << k, first = index & ~(n - 1);
		uintptr_t a;

		if (first < m->pgoff)
			continue;
		a = m->lo + (uintptr_t)(first - m->pgoff) * UFFD_PAGE_SIZE;
		if ((a & (n * UFFD_PAGE_SIZE - 1)) == 0 && a + n * UFFD_PAGE_SIZE <= m->hi)
			ok |= (uint16_t)(1U << k);
	}
	return ok;
}

/* Fill [a, b) with zeroed pages, skipping those already in the page cache; the caller wakes the
 * range once it has counted them (a woken program may exit at once, its handler with it). */
static uint64_t deliver(struct uffd_live *lv, uintptr_t a, uintptr_t b)
{
	const void *src = lv->zero_block ? lv->zero_block : lv->zero_page;
	size_t chunk = lv->zero_block ? UFFD_MTHP_MAX_BYTES : UFFD_PAGE_SIZE;
	uint64_t pages = 0;

	while (a < b) {
		size_t len = b - a < chunk ? b - a : chunk;
		int64_t done = 0;
		int rc = uffd_io_copy(lv->uffd, a, src, len, false, &done);

		pages += (uint64_t)done / UFFD_PAGE_SIZE;
		a += (uintptr_t)done;
		if (rc == 0 && (size_t)done == len)
			continue;
		if (rc == -EEXIST) { /* another process's page, or a thread's duplicate */
			UFFD_COUNT(lv, eexist);
			a += UFFD_PAGE_SIZE;
		} else if (rc == -EAGAIN) {
			continue; /* partial progress: go on from where it stopped */
		} else if (rc < 0) {
			if (rc != -ENOENT && rc != -ESRCH && rc != -EFAULT)
				UFFD_COUNT(lv, uffd_errors);
			break; /* the mapping went meanwhile */
		}
	}
	return pages;
}

bool uffd_shmem_fault(struct uffd_worker *w, uintptr_t addr, uint64_t t_read)
{
	struct uffd_live *lv = w->lv;
	struct uffd_shmem *sh = lv->shmem;
	struct uffd_host_stats *h = &lv->stats->host;
	struct mm_shmem_req req;
	struct mm_fault_res res;
	struct shmem_map m = {0};
	uintptr_t a, b;
	uint64_t first, lat;
	bool found = false;
	int rc;

	if (!sh)
		return false;
	pthread_rwlock_rdlock(&sh->lock);
	for (unsigned i = 0; i < UFFD_SHMEM_MAPS && !found; i++) {
		if (sh->map[i].hi && addr >= sh->map[i].lo && addr < sh->map[i].hi) {
			m = sh->map[i];
			found = true;
		}
	}
	pthread_rwlock_unlock(&sh->lock);
	if (!found)
		return false;
	memset(&req, 0, sizeof(req));
	req.object = m.object;
	req.index = m.pgoff + (addr - m.lo) / UFFD_PAGE_SIZE;
	req.vma = vma_of(lv, &m);
	req.orders_ok = suitable_orders(&m, req.index);
	rc = mm_shmem_fault(lv->mm, &req, &res, w);
	uffd_stat_add(&h->shmem_faults, 1);
	a = addr;
	b = addr + UFFD_PAGE_SIZE;
	if (rc == -EEXIST) {
		uffd_stat_add(&h->shmem_cached, 1); /* the object's page: another process's folio */
	} else if (rc < 0 || res.outcome == MM_FAULT_NOMEM) {
		uffd_stat_add(&h->nomem_faults, rc < 0 ? 0 : 1);
	} else {
		/* the folio's pages this mapping maps, every one of them a PTE here */
		first = req.index & ~((1ULL << res.order) - 1);
		a = first >= m.pgoff ? m.lo + (uintptr_t)(first - m.pgoff) * UFFD_PAGE_SIZE : m.lo;
		b = m.lo + (uintptr_t)(first + (1ULL << res.order) - m.pgoff) * UFFD_PAGE_SIZE;
		if (b > m.hi)
			b = m.hi;
		if (res.outcome == MM_FAULT_HUGE)
			uffd_stat_add(&h->shmem_huge, 1);
		else if (res.outcome == MM_FAULT_MTHP)
			uffd_stat_add(&h->shmem_mthp, 1);
		else
			uffd_stat_add(&h->shmem_base, 1);
	}
	uffd_stat_add(&h->shmem_pages, deliver(lv, a, b));
	lat = clock_now_ns() - t_read;
	uffd_stat_add(&h->shmem_fault_ns, lat);
	uffd_stat_max(&h->latency_max_ns, lat);
	uffd_io_wake(lv->uffd, a, b - a); /* counted first: the woken program may exit at once */
	return true;
}
