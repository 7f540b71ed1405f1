/* The memory census: what of the program's memory thpemu manages, and why the rest is not.
 *
 * Every second or so, whenever the process has grown by a quarter since the last census (the
 * background thread reads its resident size from /proc/self/statm every tick), before the
 * program frees 2 MiB or more of managed memory after it grew by a sixteenth, and at exit - at most
 * 5 % of the time of the thread that takes it - the process reads its own /proc/self/smaps, or
 * /proc/self/maps and PAGEMAP_SCAN where they tell the same (the light census, below; raw system
 * calls into a buffer of its own: no stdio, no allocation through the program's allocator) and
 * sorts every VMA's resident anonymous memory into three piles: in managed regions (the
 * emulator decided every one of those pages), thpemu's own (mappings made by guard_vm_map:
 * MADV_DONTDUMP, "dd" in VmFlags), and the program's unmanaged memory, each VMA with the reason it
 * is not managed. The census in which the program had the most anonymous memory is kept (a runtime
 * frees its heap before the exit hook runs: node's is gone by then; a short run frees what it held
 * before any periodic census), and on a machine the latest is published in the process's slot,
 * where the host sums the live processes' over time: a run's total at its largest is the largest
 * such sum, not the sum of every process's own largest (a build's hundreds of compilers never all
 * lived at once). The report carries the sums, the managed share, the unmanaged bytes by reason and
 * the largest unmanaged mappings, so that a run whose memory mostly bypassed the emulator (a brk
 * heap under glibc malloc, a runtime that maps memory in a way the interposers do not see) says so
 * instead of looking clean.
 *
 * Reasons are read from what smaps shows: the name ([heap], [stack], a path), the permissions,
 * the VmFlags (nh: MAP_STACK or MADV_NOHUGEPAGE since Linux 6.7, mm/mmap.c: calc_vma_flags ...
 * MAP_STACK -> VM_NOHUGEPAGE; dd: MADV_DONTDUMP) and the size against --min-region. Adjacent
 * anonymous mappings with equal flags merge into one VMA: the interposers remember the small
 * eligible mappings that passed them, so that a VMA merged from such neighbours (Ruby maps its
 * heap 32 KiB at a time) is "small", not "unseen". Shared memory (MAP_SHARED anonymous, memfd,
 * SysV and POSIX shm: shmem, which smaps does not call Anonymous) is counted with the program's
 * anonymous memory at its Pss, managed when shmem.c manages the mapping, else unmanaged as
 * "shared" (PostgreSQL's shared buffers would otherwise appear nowhere). A program's own
 * MADV_DONTDUMP memory would count as thpemu's. The census's format, its reasons' names and merging
 * censuses are the report's (core/report: stats.h, stats.c).
 */
#include "live/uffd_internal.h"

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "util/clock.h"
#include "util/sys.h"

#define CENSUS_BUF	     (32 * 1024) /* a few reads of smaps: fewer pages touched, freed */
#define CENSUS_MIN_PERIOD_NS (1000ULL * 1000000ULL) /* the periodic census */
#define CENSUS_BIG_FREE	     (2ULL << 20) /* a free this large looks whether a census is due */
#define CENSUS_COST_SHARE    20		  /* a census costs at most 1/20 of the thread's time */

struct vma {
	uint64_t lo, hi, rss_kb, anon_kb, pss_kb;
	char perms[5];
	bool file, nohuge, own;
	bool flags_unknown; /* the light census: "nh" may be set (VmFlags not read) */
	unsigned dev_major; /* of the file's device (0: tmpfs, hugetlbfs, a memfd, ...) */
	char name[64];
};

static void small_lock(struct uffd_census_state *cs)
{
	while (__atomic_exchange_n(&cs->small_lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void small_unlock(struct uffd_census_state *cs)
{
	__atomic_store_n(&cs->small_lock, 0, __ATOMIC_RELEASE);
}

void uffd_census_note_small(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_census_state *cs = &lv->census;

	small_lock(cs);
	for (unsigned i = 0; i < cs->nsmall; i++) { /* a neighbour: one range */
		if (cs->small[i].hi == lo || cs->small[i].lo == hi) {
			cs->small[i].lo = lo < cs->small[i].lo ? lo : cs->small[i].lo;
			cs->small[i].hi = hi > cs->small[i].hi ? hi : cs->small[i].hi;
			small_unlock(cs);
			return;
		}
	}
	if (cs->nsmall < UFFD_SMALL_RANGES) {
		cs->small[cs->nsmall].lo = lo;
		cs->small[cs->nsmall].hi = hi;
		cs->nsmall++;
	}
	small_unlock(cs);
}

void uffd_census_forget_small(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_census_state *cs = &lv->census;

	if (!__atomic_load_n(&cs->nsmall, __ATOMIC_RELAXED))
		return;
	small_lock(cs);
	for (unsigned i = 0; i < cs->nsmall; i++) {
		uintptr_t *a = &cs->small[i].lo, *b = &cs->small[i].hi;

		if (hi <= *a || lo >= *b)
			continue;
		if (lo <= *a && hi >= *b) { /* all of it */
			cs->small[i] = cs->small[--cs->nsmall];
			i--;
		} else if (lo <= *a) {
			*a = hi;
		} else if (hi >= *b) {
			*b = lo;
		} else if (cs->nsmall < UFFD_SMALL_RANGES) { /* the middle: two */
			cs->small[cs->nsmall].lo = hi;
			cs->small[cs->nsmall].hi = *b;
			cs->nsmall++;
			*b = lo;
		}
	}
	small_unlock(cs);
}

static uint64_t hex(const char **p)
{
	uint64_t v = 0;

	for (;; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

static uint64_t kb_field(const char *line, const char *key)
{
	size_t n = strlen(key);
	uint64_t v = 0;

	if (strncmp(line, key, n) != 0)
		return UINT64_MAX;
	for (line += n; *line == ' '; line++)
		;
	for (; *line >= '0' && *line <= '9'; line++)
		v = v * 10 + (uint64_t)(*line - '0');
	return v;
}

/* "lo-hi perms offset dev inode   name" */
static bool parse_header(const char *line, struct vma *v)
{
	const char *p = line;
	int field = 0;

	memset(v, 0, sizeof(*v));
	v->lo = hex(&p);
	if (*p != '-')
		return false;
	p++;
	v->hi = hex(&p);
	if (*p != ' ' || v->hi <= v->lo)
		return false;
	p++;
	memcpy(v->perms, p, 4);
	/* skip perms, offset, dev; inode != 0 means a file */
	for (; *p && field < 4; field++) {
		while (*p && *p != ' ')
			p++;
		while (*p == ' ')
			p++;
		if (field == 1) { /* the device, "major:minor" in hex */
			const char *q = p;

			v->dev_major = (unsigned)hex(&q);
		}
		if (field == 2) {
			const char *q = p;

			while (*q >= '0' && *q <= '9') {
				v->file |= *q != '0';
				q++;
			}
		}
	}
	snprintf(v->name, sizeof(v->name), "%s", p);
	return true;
}

static bool has_flag(const char *flags, const char *f)
{
	for (const char *p = flags; *p;) {
		while (*p == ' ')
			p++;
		if (p[0] == f[0] && p[1] == f[1] && (p[2] == ' ' || p[2] == 0))
			return true;
		while (*p && *p != ' ')
			p++;
	}
	return false;
}

/* Is most of [lo, hi) covered by small eligible mappings that passed the interposers? */
static bool merged_small(struct uffd_live *lv, uintptr_t lo, uintptr_t hi)
{
	struct uffd_census_state *cs = &lv->census;
	uint64_t covered = 0;

	small_lock(cs);
	for (unsigned i = 0; i < cs->nsmall; i++) {
		uintptr_t a = cs->small[i].lo > lo ? cs->small[i].lo : lo;
		uintptr_t b = cs->small[i].hi < hi ? cs->small[i].hi : hi;

		if (b > a)
			covered += b - a;
	}
	small_unlock(cs);
	return covered * 2 >= hi - lo;
}

static enum uffd_unmanaged_why why_not(struct uffd_live *lv, const struct vma *v)
{
	if (strcmp(v->name, "[heap]") == 0)
		return UFFD_WHY_brk;
	if (strncmp(v->name, "[stack", 6) == 0)
		return UFFD_WHY_stack;
	if (v->perms[3] == 's')
		return UFFD_WHY_shared;
	if (v->file || v->name[0] == '/')
		return UFFD_WHY_file;
	if (strcmp(v->perms, "rw-p") != 0 && strcmp(v->perms, "---p") != 0)
		return UFFD_WHY_prot;
	if (v->nohuge)
		return UFFD_WHY_stack;
	if (v->hi - v->lo < lv->cfg.min_region || merged_small(lv, v->lo, v->hi))
		return UFFD_WHY_small;
	return UFFD_WHY_unseen;
}

/* Shared memory (shmem, swap-backed like anonymous memory): a MAP_SHARED anonymous mapping
 * ("/dev/zero (deleted)", mm/shmem.c shmem_zero_setup), a memfd ("/memfd:NAME (deleted)"), a SysV
 * segment ("/SYSV%08x (deleted)", ipc/shm.c newseg), a POSIX one (shm_open: "/dev/shm/NAME") or a
 * named shared anonymous mapping ("[anon_shmem:NAME]"). A MAP_SHARED mapping of another file is
 * its page cache, not counted. */
static bool shmem_vma(const struct vma *v)
{
	return v->perms[3] == 's' &&
	       (strncmp(v->name, "/dev/zero", 9) == 0 || strncmp(v->name, "/memfd:", 7) == 0 ||
		strncmp(v->name, "/SYSV", 5) == 0 || strncmp(v->name, "/dev/shm/", 9) == 0 ||
		strncmp(v->name, "[anon_shmem:", 12) == 0);
}

/* false: the light census cannot tell this VMA's reason (it needs VmFlags). pid: this process's,
 * asked once a census (a getpid a VMA was some 25 system calls of a short process's exit). */
static bool account(struct uffd_live *lv, struct uffd_census *c, const struct vma *v, int32_t pid)
{
	/* shared memory: its proportional share (Pss), so that the processes mapping one segment
	 * sum to the segment once, as a machine's total does (host.c) */
	uint64_t anon = (shmem_vma(v) ? v->pss_kb : v->anon_kb) * 1024;
	struct uffd_unmanaged_map m;

	c->vmas++;
	c->rss += v->rss_kb * 1024;
	c->anon += anon;
	if (!anon)
		return true;
	if (v->own) {
		c->anon_own += anon;
		return true;
	}
	if (uffd_table_overlaps(&lv->table, (uintptr_t)v->lo, (uintptr_t)v->hi) ||
	    (shmem_vma(v) && uffd_shmem_overlaps(lv, (uintptr_t)v->lo, (uintptr_t)v->hi))) {
		c->anon_managed += anon;
		return true;
	}
	memset(&m, 0, sizeof(m));
	m.start = v->lo;
	m.size = v->hi - v->lo;
	m.anon = anon;
	m.pid = pid;
	m.why = why_not(lv, v);
	/* unseen or small without "nh" may be a stack (MAP_STACK) with it */
	if (v->flags_unknown && (m.why == UFFD_WHY_unseen || m.why == UFFD_WHY_small))
		return false;
	memcpy(m.name, v->name, sizeof(m.name));
	c->why_anon[m.why] += anon;
	uffd_census_keep_largest(c, &m);
	return true;
}

static void line(struct uffd_live *lv, struct uffd_census *c, struct vma *v, bool *open,
		 const char *s, int32_t pid)
{
	uint64_t kb;

	if ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')) {
		struct vma next;

		if (parse_header(s, &next)) {
			if (*open)
				(void)account(lv, c, v, pid);
			*v = next;
			*open = true;
			return;
		}
	}
	if (!*open)
		return;
	if ((kb = kb_field(s, "Rss:")) != UINT64_MAX)
		v->rss_kb = kb;
	else if ((kb = kb_field(s, "Anonymous:")) != UINT64_MAX)
		v->anon_kb = kb;
	else if ((kb = kb_field(s, "Pss:")) != UINT64_MAX)
		v->pss_kb = kb;
	else if (strncmp(s, "VmFlags:", 8) == 0) {
		v->nohuge = has_flag(s + 8, "nh");
		v->own = has_flag(s + 8, "dd");
	}
}

/* The latest census in this process's slot: anon, managed, thpemu's own, then by reason (the
 * host sums the live slots: core/host/host.c, run_host_mem_peak). */
_Static_assert(3 + UFFD_WHY_NR <= MACHINE_SLOT_MEM, "a slot's memory words");

static void publish(struct uffd_live *lv, const struct uffd_census *c)
{
	uint64_t w[MACHINE_SLOT_MEM] = {c->anon, c->anon_managed, c->anon_own};

	for (unsigned i = 0; i < UFFD_WHY_NR; i++)
		w[3 + i] = c->why_anon[i];
	machine_slot_set_mem(&lv->mach, lv->mslot, w);
	/* the machine's total now: a peak seen when it happens, not at the host's next sample */
	machine_mem_sum(&lv->mach, w);
	machine_mem_offer(&lv->mach, w, uffd_census_words_program(w));
}

static void census_take_locked(struct uffd_live *lv);

/* One census at a time: the background tick and the exit path would otherwise read smaps twice
 * at once, and their buffers come from raw mmap/munmap, which a race detector cannot see (an
 * address unmapped by one and mapped again by the other looks like a shared buffer). */
void uffd_census_take(struct uffd_live *lv)
{
	uint64_t t0, now;

	pthread_mutex_lock(&lv->census_lock);
	t0 = clock_now_ns();
	census_take_locked(lv);
	now = clock_now_ns();

	/* read without the lock by uffd_census_tick and uffd_census_before_free */
	__atomic_store_n(&lv->census.last_ns, now, __ATOMIC_RELAXED);
	lv->census.took_ns = now - t0;
	__atomic_store_n(&lv->census.next_ns, now + lv->census.took_ns * CENSUS_COST_SHARE,
			 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lv->census_lock);
}

/* Resident bytes now (/proc/self/statm's second field), 0 if unknown. */
static uint64_t rss_now(void)
{
	char buf[128];
	long fd = guard_fd_open("/proc/self/statm");
	long n;
	const char *p = buf;
	uint64_t pages = 0;

	if (fd < 0)
		return 0;
	n = sys_read((int)fd, buf, sizeof(buf) - 1);
	guard_fd_close((int)fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	while (*p && *p != ' ')
		p++;
	for (p += *p == ' '; *p >= '0' && *p <= '9'; p++)
		pages = pages * 10 + (uint64_t)(*p - '0');
	return pages * UFFD_PAGE_SIZE;
}

/* Has the process grown by a 1/share (and slack bytes) since the last census? */
static bool grown(const struct uffd_census_state *cs, unsigned share, uint64_t slack)
{
	uint64_t last = __atomic_load_n(&cs->last_rss, __ATOMIC_RELAXED);

	return rss_now() > last + last / share + slack;
}

void uffd_census_tick(struct uffd_live *lv)
{
	struct uffd_census_state *cs = &lv->census;
	uint64_t now = clock_now_ns();

	if (now < __atomic_load_n(&cs->next_ns, __ATOMIC_RELAXED))
		return; /* within its share of the thread's time */
	if (now >= __atomic_load_n(&cs->last_ns, __ATOMIC_RELAXED) + CENSUS_MIN_PERIOD_NS ||
	    grown(cs, 4, 4ULL << 20))
		uffd_census_take(lv);
}

/* A process at a new height that starts freeing is at its largest now: within 1/32 of its
 * resident size. No slack here: with the tick's 4 MiB on top, a 256 MiB program freeing at once
 * was seen as low as 234 MiB. (No share of time to keep: each such census needs the process
 * larger than at the last one, so a program that maps and frees the same memory again and again
 * pays for one.) */
void uffd_census_before_free(struct uffd_live *lv, uint64_t bytes)
{
	if (bytes >= CENSUS_BIG_FREE && grown(&lv->census, 32, 0))
		uffd_census_take(lv);
}

/* Every line of fd, NUL-terminated, to fn, read with raw reads through buf (CENSUS_BUF bytes;
 * a line longer than that is dropped): 0 when read to its end, -errno if a read failed (the
 * lines before it were given). fd is closed. */
static int each_line(int fd, char *buf, void (*fn)(void *arg, const char *line), void *arg)
{
	size_t have = 0;
	int rc = 0;

	for (;;) {
		long n = sys_read(fd, buf + have, CENSUS_BUF - 1 - have);
		size_t start = 0;

		if (n < 0 && n != -EINTR) {
			rc = (int)n;
			break;
		}
		if (n == 0) {
			if (have) { /* a last line without its newline */
				buf[have] = 0;
				fn(arg, buf);
			}
			break;
		}
		have += n > 0 ? (size_t)n : 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			buf[i] = 0;
			fn(arg, buf + start);
			start = i + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == CENSUS_BUF - 1)
			have = 0; /* a line longer than the buffer: drop it */
	}
	guard_fd_close(fd);
	return rc;
}

/* ---- the full census: /proc/self/smaps --------------------------------------------------------
 */

struct full {
	struct uffd_live *lv;
	struct uffd_census *c;
	struct vma v;
	bool open;
	int32_t pid;
};

static void full_line(void *arg, const char *s)
{
	struct full *f = arg;

	line(f->lv, f->c, &f->v, &f->open, s, f->pid);
}

/* false: smaps could not be opened */
static bool census_full(struct uffd_live *lv, struct uffd_census *c, char *buf)
{
	struct full f = {.lv = lv, .c = c, .pid = (int32_t)sys_getpid()};
	int fd = guard_fd_open("/proc/self/smaps");

	if (fd < 0)
		return false;
	memset(c, 0, sizeof(*c));
	(void)each_line(fd, buf, full_line, &f); /* what was read of it, after a read error too */
	if (f.open)
		(void)account(lv, c, &f.v, f.pid);
	return true;
}

/* ---- the light census: /proc/self/maps and PAGEMAP_SCAN ---------------------------------------
 *
 * smaps costs the kernel a page walk and some 25 formatted lines per VMA (fs/proc/task_mmu.c:
 * show_smap), and a managed process has about four times a native one's VMAs (the libraries the
 * allocator and the emulator bring, the arena's pieces): a millisecond of CPU at every short
 * process's exit. The same figures come from /proc/self/maps (one line a VMA, no page walk) and
 * PAGEMAP_SCAN over the address space, which returns runs of pages by category (6.7+
 * fs/proc/task_mmu.c: do_pagemap_scan; pagemap_page_category and pagemap_thp_category; used
 * from 6.16, see uffd_census_light_supported): a resident page is a present one but the zero page
 * (smaps_pte_entry and smaps_pmd_entry count vm_normal_page's pages, which the zero page is not),
 * an anonymous one a resident one not PAGE_IS_FILE ("page && !PageAnon(page)"; smaps's Anonymous
 * counts PageAnon pages). VM_PFNMAP VMAs are skipped by the scan (pagemap_scan_test_walk) and count
 * no pages in smaps either. What the scan cannot tell:
 *  - VmFlags. "dd" (thpemu's own) is known without them: the arena (guard_vm_owns) and the
 *    machine's segment are all of it unless a mapping went outside the arena (then smaps is read).
 *    "nh" (MAP_STACK; MADV_NOHUGEPAGE) makes a mapping the interposers did not see "stack"
 *    rather than "unseen" or "small": such a mapping right above a PROT_NONE guard of at most
 *    1 MiB (a thread's stack) sends the census to smaps; elsewhere the light census takes it as
 *    without "nh" (a MAP_STACK mapping with no guard or a larger one, or the program's
 *    MADV_NOHUGEPAGE on memory it mapped behind the interposers' back, is "unseen" or "small"
 *    here).
 *  - Pss. Shared memory is counted at its Pss: a shmem VMA with resident pages sends the census
 *    to smaps, but for the machine's segment, whose Pss comes from its pages' mapcounts
 *    (seg_pss_kb) or is the Pss_Shmem of /proc/self/smaps_rollup (smaps_page_accumulate:
 *    swap-backed pages that are not anonymous) since nothing else maps such pages: a
 *    resident page of a file on a device with major 0 (tmpfs, a memfd; hugetlbfs, whose pages
 *    smaps does not count; also overlayfs and btrfs, to be safe) sends the census to smaps too.
 * A program's own MADV_DONTDUMP memory is the program's here, where smaps's census counts it as
 * thpemu's. */

#define LIGHT_VEC	128
#define LIGHT_LOW_END	((1ULL << 47) - 4096) /* a scan's end: below every user space's top */
#define LIGHT_KERNEL	(1ULL << 63)	      /* [vsyscall]: no page of the process */
#define LIGHT_GUARD_MAX (1ULL << 20)	      /* a thread stack's guard is at most this large */
#define LIGHT_SEG_RUNS	32		      /* the segment's resident runs noted (seg_pss_kb) */

struct light {
	struct uffd_live *lv;
	struct uffd_census *c;
	int fd;		/* /proc/self/pagemap */
	uint64_t next;	/* the scan goes on from here */
	unsigned n, i;	/* regions in r, the next one */
	bool fall_back; /* something only smaps shows */
	int err;	/* the scan's error */
	int32_t pid;
	bool machine;
	uint64_t prev_lo, prev_hi; /* the VMA before */
	char prev_perms[5];
	struct vma seg; /* the machine's segment */
	bool in_seg;	/* the scan is in the segment: its resident runs noted in seg_run */
	unsigned nseg_run;
	struct {
		uint64_t lo, hi;
	} seg_run[LIGHT_SEG_RUNS]; /* nseg_run > LIGHT_SEG_RUNS: more than it holds */
	struct page_region r[LIGHT_VEC];
};

/* A resident run [a, b) of the segment, in address order. */
static void seg_run_note(struct light *l, uint64_t a, uint64_t b)
{
	if (l->nseg_run && l->nseg_run <= LIGHT_SEG_RUNS && l->seg_run[l->nseg_run - 1].hi == a) {
		l->seg_run[l->nseg_run - 1].hi = b; /* one run the scan returned in two calls */
		return;
	}
	if (l->nseg_run < LIGHT_SEG_RUNS) {
		l->seg_run[l->nseg_run].lo = a;
		l->seg_run[l->nseg_run].hi = b;
	}
	if (l->nseg_run <= LIGHT_SEG_RUNS)
		l->nseg_run++;
}

/* Resident and anonymous bytes of [lo, hi), VMAs given in address order: 0, or -errno. */
static int scan_vma(struct light *l, uint64_t lo, uint64_t hi, uint64_t *rss, uint64_t *anon)
{
	*rss = *anon = 0;
	for (;;) {
		for (; l->i < l->n; l->i++) {
			const struct page_region *r = &l->r[l->i];
			uint64_t a = r->start > lo ? r->start : lo;
			uint64_t b = r->end < hi ? r->end : hi;

			if (r->start >= hi)
				return 0;
			if (b > a) {
				*rss += b - a;
				if (!(r->categories & PAGE_IS_FILE))
					*anon += b - a;
				if (l->in_seg)
					seg_run_note(l, a, b);
			}
			if (r->end > hi)
				return 0; /* it goes on into the next VMA */
		}
		if (l->next >= hi)
			return 0;
		struct pm_scan_arg arg = {
		    .size = sizeof(arg),
		    .start = l->next > lo ? l->next : lo,
		    .end = hi > LIGHT_LOW_END ? hi : LIGHT_LOW_END,
		    .vec = (uintptr_t)l->r,
		    .vec_len = LIGHT_VEC,
		    .category_inverted = PAGE_IS_PFNZERO,
		    .category_mask = PAGE_IS_PRESENT | PAGE_IS_PFNZERO,
		    .return_mask = PAGE_IS_PRESENT | PAGE_IS_FILE,
		};
		int n = sys_ioctl(l->fd, PAGEMAP_SCAN, &arg);

		if (n < 0)
			return n;
		if (arg.walk_end <= arg.start)
			return -EIO; /* no progress */
		l->n = (unsigned)n;
		l->i = 0;
		l->next = arg.walk_end;
	}
}

static void light_line(void *arg, const char *s)
{
	struct light *l = arg;
	struct vma v;
	uint64_t rss, anon;

	if (l->fall_back || !parse_header(s, &v))
		return;
	if (v.lo >= LIGHT_KERNEL) {
		l->c->vmas++;
		return;
	}
	l->in_seg = v.lo == MACHINE_BASE && strncmp(v.name, "/memfd:thpemu-machine", 21) == 0;
	l->err = scan_vma(l, v.lo, v.hi, &rss, &anon);
	l->in_seg = false;
	if (l->err < 0) {
		l->fall_back = true;
		return;
	}
	v.rss_kb = rss / 1024;
	v.anon_kb = anon / 1024;
	/* a thread's stack has its guard right below it (glibc nptl/allocatestack.c:
	 * allocate_stack maps the stack MAP_STACK, then makes its lowest guardsize bytes, a page
	 * by default, PROT_NONE); a reservation's rest above its used part (glibc malloc's heaps
	 * of 64 MiB, the arena) is larger */
	v.flags_unknown = l->prev_hi == v.lo && l->prev_hi - l->prev_lo <= LIGHT_GUARD_MAX &&
			  strcmp(l->prev_perms, "---p") == 0;
	l->prev_lo = v.lo;
	l->prev_hi = v.hi;
	memcpy(l->prev_perms, v.perms, sizeof(l->prev_perms));
	if (v.lo == MACHINE_BASE && strncmp(v.name, "/memfd:thpemu-machine", 21) == 0) {
		v.own = true; /* at its Pss: accounted at the end */
		l->seg = v;
		l->machine = true;
		return;
	}
	if (rss && shmem_vma(&v)) {
		l->fall_back = true; /* its Pss */
		return;
	}
	if (rss && v.file && v.dev_major == 0) {
		/* a file of tmpfs (shmem pages: Pss_Shmem would not be the segment's alone), of
		 * hugetlbfs (smaps counts no hugetlb page in Rss or Anonymous:
		 * smaps_hugetlb_range), or of another file system without a device (overlayfs,
		 * btrfs): smaps tells */
		l->fall_back = true;
		return;
	}
	v.own = guard_vm_owns((const void *)(uintptr_t)v.lo);
	if (!account(l->lv, l->c, &v, l->pid))
		l->fall_back = true;
}

/* The Pss_Shmem of /proc/self/smaps_rollup in KiB, or -errno. */
static long pss_shmem_kb(char *buf)
{
	int fd = guard_fd_open("/proc/self/smaps_rollup");
	long n, have = 0;
	const char *p;

	if (fd < 0)
		return fd;
	while ((n = sys_read(fd, buf + have, CENSUS_BUF - 1 - (size_t)have)) > 0 || n == -EINTR)
		have += n > 0 ? n : 0;
	guard_fd_close(fd);
	if (n < 0)
		return n;
	buf[have] = 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		uint64_t kb = kb_field(p, "Pss_Shmem:");

		if (kb != UINT64_MAX)
			return (long)kb;
	}
	return -ENOENT;
}

/* The machine's segment's Pss without smaps_rollup's walk of every page table of the process.
 * smaps counts a present page at PAGE_SIZE, divided by its mapcount when that is 2 or more, in
 * units of 2^-PSS_SHIFT bytes, and prints the sum >> PSS_SHIFT >> 10 in KiB (6.18
 * fs/proc/task_mmu.c: smaps_account, a folio of refcount 1 at its size, else each page at
 * folio_precise_page_mapcount, or folio_average_page_mapcount without CONFIG_PAGE_MAPCOUNT;
 * smaps_page_accumulate adds a swap-backed folio that is not anonymous to pss_shmem;
 * __show_smap's SEQ_PUT_DEC). /proc/kpagecount gives each frame that same mapcount (6.18
 * fs/proc/page.c: kpage_read for KPAGE_COUNT, kpagecount_read before it, the same choice under
 * CONFIG_PAGE_MAPCOUNT; a mapped
 * shmem page has a refcount of 2 or more, its page cache's and its mapping's), and
 * /proc/self/pagemap each resident page's frame, to CAP_SYS_ADMIN alone (fs/proc/task_mmu.c:
 * pagemap_read's show_pfn; without it the frame reads 0). So for a segment of few resident pages
 * (a short process maps some 30-50 of them, in a few runs that the scan of the address space
 * noted) the sum is read one frame at a time: about a quarter of the rollup's cost. Past
 * SEG_PSS_MAX_PAGES, without the frames or without kpagecount (not root), smaps_rollup is read as
 * before. A page under migration (a migration entry) is neither present to PAGEMAP_SCAN nor here,
 * where smaps counts it whole: a moment's difference. */
#define SEG_PSS_MAX_PAGES 256
#define PSS_SHIFT	  12
#define PM_PRESENT	  (1ULL << 63)
#define PM_PFN_MASK	  ((1ULL << 55) - 1)

/* The Pss of the segment's resident pages (the runs the scan noted) in KiB from their
 * mapcounts, or -errno (-EPERM: the frames are hidden; -E2BIG: more than SEG_PSS_MAX_PAGES
 * pages, or more runs than noted). pm: CENSUS_BUF bytes. */
static long seg_pss_kb(const struct light *l, uint64_t *pm)
{
	const uint64_t max = CENSUS_BUF / sizeof(*pm);
	uint64_t pss = 0, pages = 0;
	long rc = 0;
	int kfd;

	if (l->nseg_run > LIGHT_SEG_RUNS)
		return -E2BIG;
	if ((kfd = guard_fd_open("/proc/kpagecount")) < 0)
		return kfd;
	for (unsigned i = 0; i < l->nseg_run && !rc; i++) {
		for (uint64_t a = l->seg_run[i].lo; a < l->seg_run[i].hi && !rc;) {
			uint64_t k = (l->seg_run[i].hi - a) / UFFD_PAGE_SIZE;
			long got;

			k = k < max ? k : max;
			if ((pages += k) > SEG_PSS_MAX_PAGES) {
				rc = -E2BIG;
				break;
			}
			got = sys_call4(SYS_pread64, l->fd, (long)pm, (long)(k * sizeof(*pm)),
					(long)(a / UFFD_PAGE_SIZE * sizeof(*pm)));
			if (got != (long)(k * sizeof(*pm))) {
				rc = got < 0 ? got : -EIO;
				break;
			}
			for (uint64_t j = 0; j < k; j++) {
				uint64_t pfn = pm[j] & PM_PFN_MASK, mc = 0;

				if (!(pm[j] & PM_PRESENT))
					continue; /* gone since the scan: not resident */
				if (!pfn) {
					rc = -EPERM;
					break;
				}
				got = sys_call4(SYS_pread64, kfd, (long)&mc, (long)sizeof(mc),
						(long)(pfn * sizeof(mc)));
				if (got != (long)sizeof(mc)) {
					rc = got < 0 ? got : -EIO;
					break;
				}
				pss += mc >= 2 ? ((uint64_t)UFFD_PAGE_SIZE << PSS_SHIFT) / mc
					       : (uint64_t)UFFD_PAGE_SIZE << PSS_SHIFT;
			}
			a += k * UFFD_PAGE_SIZE;
		}
	}
	guard_fd_close(kfd);
	return rc ? rc : (long)((pss >> PSS_SHIFT) >> 10);
}

/* The segment's resident runs noted afresh: 0, or -errno. */
static int seg_rescan(struct light *l)
{
	uint64_t rss, anon;
	int rc;

	l->nseg_run = 0;
	l->n = l->i = 0;
	l->next = l->seg.lo;
	l->in_seg = true;
	rc = scan_vma(l, l->seg.lo, l->seg.hi, &rss, &anon);
	l->in_seg = false;
	return rc;
}

/* --log debug: the rollup's figure beside the mapcounts' (read before and after it: the host
 * or this process's own threads may map a page of the segment meanwhile, so the second read
 * scans the segment again for the pages that became resident since the census's scan), one
 * line on stderr (tests/integration/live_census.sh compares them on real programs). */
static void seg_pss_check(struct light *l, long kb, char *buf)
{
	long roll = pss_shmem_kb(buf), again = seg_rescan(l);

	if (again == 0)
		again = seg_pss_kb(l, (uint64_t *)buf);
	char msg[160];
	int n =
	    snprintf(msg, sizeof(msg),
		     "thpemu: pid %d census: the machine's segment's Pss %ld KiB from its pages' "
		     "mapcounts, %ld KiB from smaps_rollup, %ld KiB again\n",
		     sys_getpid(), kb, roll, again);

	if (n > 0)
		(void)sys_write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* Where the light census gives smaps's figures: a kernel whose PAGEMAP_SCAN tells the huge zero
 * page (6.16 fs/proc/task_mmu.c: pagemap_thp_category tests is_huge_zero_pmd; before it, only
 * is_zero_pfn, never true for a huge zero PMD, which came back resident), and a glibc that guards
 * thread stacks with a PROT_NONE VMA of their own (2.42 may use MADV_GUARD_INSTALL markers inside
 * the stack's VMA instead, which the stack rule below cannot see). Elsewhere: the full census. */
bool uffd_census_light_supported(void)
{
	static int known; /* 0: not yet, 1: yes, -1: no */
	struct utsname u;
	unsigned kmaj = 0, kmin = 0, gmaj = 0, gmin = 0;
	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (k)
		return k > 0;
	k = uname(&u) == 0 && sscanf(u.release, "%u.%u", &kmaj, &kmin) == 2 &&
		    (kmaj > 6 || (kmaj == 6 && kmin >= 16)) &&
		    sscanf(gnu_get_libc_version(), "%u.%u", &gmaj, &gmin) == 2 &&
		    (gmaj < 2 || (gmaj == 2 && gmin < 42))
		? 1
		: -1;
	__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	return k > 0;
}

/* false: take the full census */
static bool census_light(struct uffd_live *lv, struct uffd_census *c, char *buf)
{
	struct light *l = (struct light *)(buf + CENSUS_BUF);
	long kb;
	int fd;

	if (lv->pagemap_fd < 0 || lv->census.light_off || !uffd_census_light_supported() ||
	    guard_vm_went_outside())
		return false;
	if ((fd = guard_fd_open("/proc/self/maps")) < 0)
		return false;
	memset(c, 0, sizeof(*c));
	memset(l, 0, sizeof(*l));
	l->lv = lv;
	l->c = c;
	l->fd = lv->pagemap_fd;
	l->pid = (int32_t)sys_getpid();
	if (each_line(fd, buf, light_line, l) < 0 || l->fall_back) {
		/* no PAGEMAP_SCAN here (before 6.7), or a user space below the scan's end */
		if (l->err == -EINVAL || l->err == -ENOTTY || l->err == -EFAULT)
			lv->census.light_off = true;
		return false;
	}
	if (l->machine) {
		if (l->seg.rss_kb) {
			kb = seg_pss_kb(l, (uint64_t *)buf);
			if (kb >= 0 && lv->cfg.log >= CONFIG_LOG_DEBUG)
				seg_pss_check(l, kb, buf);
			if (kb < 0 && (kb = pss_shmem_kb(buf)) < 0)
				return false;
			l->seg.pss_kb = (uint64_t)kb;
		}
		(void)account(lv, c, &l->seg, l->pid);
	}
	return true;
}

#define CENSUS_MAP (CENSUS_BUF + sizeof(struct light))

int uffd_census_read(struct uffd_live *lv, struct uffd_census *c, enum uffd_census_how how)
{
	long p = guard_vm_map(CENSUS_MAP, 0, 0, 0);
	int rc = -1;

	if (sys_is_err(p))
		return -1;
	if (how != UFFD_CENSUS_FULL && census_light(lv, c, (char *)p))
		rc = 1;
	else if (how != UFFD_CENSUS_LIGHT && census_full(lv, c, (char *)p))
		rc = 0;
	guard_vm_unmap((void *)p, CENSUS_MAP);
	return rc;
}

static void census_take_locked(struct uffd_live *lv)
{
	struct uffd_census c;

	if (uffd_census_read(lv, &c, UFFD_CENSUS_AUTO) < 0)
		return;
	c.processes = 1;
	/* the largest census wins: the program's memory at its largest that was seen */
	pthread_mutex_lock(&lv->snap_lock);
	if (!lv->stats->mem.processes ||
	    c.anon - c.anon_own >= lv->stats->mem.anon - lv->stats->mem.anon_own)
		lv->stats->mem = c;
	pthread_mutex_unlock(&lv->snap_lock);
	__atomic_store_n(&lv->census.last_rss, c.rss, __ATOMIC_RELAXED);
	if (lv->on_machine)
		publish(lv, &c);
}
