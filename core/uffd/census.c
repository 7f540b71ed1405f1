/* The memory census: what of the program's memory thpemu manages, and why the rest is not.
 *
 * Every now and then (the background thread: at least a second apart, and at most 5 % of its
 * time) and at exit, the process reads its own /proc/self/smaps (raw system calls into a buffer of
 * its own: no stdio, no allocation through the program's allocator) and sorts every VMA's resident
 * anonymous memory into three piles: in managed regions (the emulator decided every one of those
 * pages), thpemu's own (mappings made by guard_vm_map: MADV_DONTDUMP, "dd" in VmFlags), and the
 * program's unmanaged memory, each VMA with the reason it is not managed. The census in which the
 * program had the most anonymous memory is kept (a runtime frees its heap before the exit hook
 * runs: node's is gone by then). The report carries the
 * sums, the managed share, the unmanaged bytes by reason and the largest unmanaged mappings, so
 * that a run whose memory mostly bypassed the emulator (a brk heap under glibc malloc, a runtime
 * that maps memory in a way the interposers do not see) says so instead of looking clean.
 *
 * Reasons are read from what smaps shows: the name ([heap], [stack], a path), the permissions,
 * the VmFlags (nh: MAP_STACK or MADV_NOHUGEPAGE since Linux 6.7, mm/mmap.c: calc_vma_flags ...
 * MAP_STACK -> VM_NOHUGEPAGE; dd: MADV_DONTDUMP) and the size against --min-region. Adjacent
 * anonymous mappings with equal flags merge into one VMA, so "smaller than --min-region" is
 * judged on the VMA, and a program's own MADV_DONTDUMP memory would count as thpemu's.
 */
#include "uffd/uffd_internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>

#include "util/sys.h"

#define X_NAME(name, help) #name,
#define X_HELP(name, help) help,
const char *const uffd_why_names[] = {UFFD_UNMANAGED_REASONS(X_NAME)};
const char *const uffd_why_help[] = {UFFD_UNMANAGED_REASONS(X_HELP)};
#undef X_NAME
#undef X_HELP

#define CENSUS_BUF (256 * 1024)

struct vma {
	uint64_t lo, hi, rss_kb, anon_kb;
	char perms[5];
	bool file, nohuge, own;
	char name[64];
};

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

static enum uffd_unmanaged_why why_not(const struct uffd_live *lv, const struct vma *v)
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
	if (v->hi - v->lo < lv->cfg.min_region)
		return UFFD_WHY_small;
	return UFFD_WHY_unseen;
}

static void keep_largest(struct uffd_census *c, const struct uffd_unmanaged_map *m)
{
	unsigned i = UFFD_CENSUS_TOP;

	if (!m->anon || m->anon <= c->top[UFFD_CENSUS_TOP - 1].anon)
		return;
	while (i > 0 && c->top[i - 1].anon < m->anon) {
		if (i < UFFD_CENSUS_TOP)
			c->top[i] = c->top[i - 1];
		i--;
	}
	c->top[i] = *m;
}

static void account(struct uffd_live *lv, struct uffd_census *c, const struct vma *v)
{
	uint64_t anon = v->anon_kb * 1024;
	struct uffd_unmanaged_map m;

	c->vmas++;
	c->rss += v->rss_kb * 1024;
	c->anon += anon;
	if (!anon)
		return;
	if (v->own) {
		c->anon_own += anon;
		return;
	}
	if (uffd_table_overlaps(&lv->table, (uintptr_t)v->lo, (uintptr_t)v->hi)) {
		c->anon_managed += anon;
		return;
	}
	memset(&m, 0, sizeof(m));
	m.start = v->lo;
	m.size = v->hi - v->lo;
	m.anon = anon;
	m.pid = (int32_t)sys_getpid();
	m.why = why_not(lv, v);
	memcpy(m.name, v->name, sizeof(m.name));
	c->why_anon[m.why] += anon;
	keep_largest(c, &m);
}

static void line(struct uffd_live *lv, struct uffd_census *c, struct vma *v, bool *open,
		 const char *s)
{
	uint64_t kb;

	if ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')) {
		struct vma next;

		if (parse_header(s, &next)) {
			if (*open)
				account(lv, c, v);
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
	else if (strncmp(s, "VmFlags:", 8) == 0) {
		v->nohuge = has_flag(s + 8, "nh");
		v->own = has_flag(s + 8, "dd");
	}
}

static void census_take_locked(struct uffd_live *lv);

/* One census at a time: the background tick and the exit path would otherwise read smaps twice
 * at once, and their buffers come from raw mmap/munmap, which a race detector cannot see (an
 * address unmapped by one and mapped again by the other looks like a shared buffer). */
void uffd_census_take(struct uffd_live *lv)
{
	pthread_mutex_lock(&lv->census_lock);
	census_take_locked(lv);
	pthread_mutex_unlock(&lv->census_lock);
}

static void census_take_locked(struct uffd_live *lv)
{
	struct uffd_census c;
	long p = guard_vm_map(CENSUS_BUF, 0, 0, 0);
	char *buf;
	size_t have = 0;
	bool open = false;
	struct vma v;
	int fd;

	if (sys_is_err(p))
		return;
	buf = (char *)p;
	fd = (int)sys_call4(SYS_openat, AT_FDCWD, "/proc/self/smaps", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		goto unmap;
	memset(&c, 0, sizeof(c));
	for (;;) {
		long n = sys_read(fd, buf + have, CENSUS_BUF - 1 - have);
		size_t start = 0;

		if (n < 0 && n != -EINTR)
			break;
		if (n <= 0 && n != -EINTR) {
			if (have) { /* a last line without its newline */
				buf[have] = 0;
				line(lv, &c, &v, &open, buf);
			}
			break;
		}
		have += n > 0 ? (size_t)n : 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			buf[i] = 0;
			line(lv, &c, &v, &open, buf + start);
			start = i + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == CENSUS_BUF - 1)
			have = 0; /* a line longer than the buffer: drop it */
	}
	if (open)
		account(lv, &c, &v);
	sys_close(fd);
	c.processes = 1;
	/* the largest census wins: the program's memory at its largest that was seen */
	pthread_mutex_lock(&lv->snap_lock);
	if (!lv->stats->mem.processes ||
	    c.anon - c.anon_own >= lv->stats->mem.anon - lv->stats->mem.anon_own)
		lv->stats->mem = c;
	pthread_mutex_unlock(&lv->snap_lock);
unmap:
	guard_vm_unmap(buf, CENSUS_BUF);
}

void uffd_census_merge(struct uffd_census *dst, const struct uffd_census *src)
{
	dst->processes += src->processes;
	dst->vmas += src->vmas;
	dst->rss += src->rss;
	dst->anon += src->anon;
	dst->anon_managed += src->anon_managed;
	dst->anon_own += src->anon_own;
	for (unsigned i = 0; i < UFFD_WHY_NR; i++)
		dst->why_anon[i] += src->why_anon[i];
	for (unsigned i = 0; i < UFFD_CENSUS_TOP; i++)
		keep_largest(dst, &src->top[i]);
}
