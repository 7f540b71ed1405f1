/* Soak: a long checksummed run of everything at once, until a number of bytes has been touched.
 *
 *  - writer threads keep checksummed pages (a tag per page, the rest generated from it) in their
 *    areas (half of them MADV_HUGEPAGE) and verify them all every 256 writes;
 *  - churner threads map, fill, MADV_DONTNEED part of, verify and unmap regions in two steps;
 *  - a remapper thread grows (moving), shrinks and partly remaps filled regions and verifies them;
 *  - a huge-fault thread keeps faulting 2 MiB extents, so that emulated compaction migrates
 *    everybody's pages;
 *  - a forker thread forks children of three kinds, each of which verifies every writer page
 *    against the tags at fork time (writers pause their single page write for the fork): one
 *    exits, one execs /bin/true afterwards, one (run as root) drops to uid/gid 65534 first.
 * Any byte that is neither what was written nor zero where memory was freed is corrupted.
 * Output: one line of counts; exit status 1 on any corruption.
 *
 *   soak [GIGABYTES [WRITERS [CHURNERS [MB_PER_WRITER]]]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE  4096UL
#define HPAGE (2UL << 20)
#define WORDS (PAGE / 8)

static atomic_ullong corrupted, verified, touched, churned, remapped, huge_rounds;
static atomic_ullong children, child_bad, child_pages;
static atomic_int stop, reported;
static pthread_rwlock_t fork_lock = PTHREAD_RWLOCK_INITIALIZER;

struct writer {
	pthread_t th;
	unsigned id;
	size_t bytes;
	bool huge;
	uint64_t *area;
	uint64_t *tags; /* 0: never written (reads as zeros) */
};

static struct writer *writers;
static unsigned nwriters;

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void write_page(uint64_t *pg, uint64_t tag)
{
	uint64_t s = tag | 1;

	pg[0] = tag;
	for (size_t i = 1; i < WORDS; i++)
		pg[i] = xs(&s);
	atomic_fetch_add(&touched, PAGE);
}

static unsigned long check_page(const uint64_t *pg, uint64_t tag)
{
	uint64_t s = tag | 1;
	unsigned long bad = 0;

	if (!tag) {
		for (size_t i = 0; i < WORDS; i++)
			bad += pg[i] ? 8 : 0;
		return bad;
	}
	bad += pg[0] != tag ? 8 : 0;
	for (size_t i = 1; i < WORDS; i++) {
		uint64_t want = xs(&s);

		if (pg[i] != want)
			for (int b = 0; b < 8; b++)
				bad += ((pg[i] >> (8 * b)) & 0xff) != ((want >> (8 * b)) & 0xff);
	}
	return bad;
}

static void account(const char *who, const void *pg, unsigned long bad)
{
	if (!bad)
		return;
	atomic_fetch_add(&corrupted, bad);
	if (atomic_fetch_add(&reported, 1) < 8)
		fprintf(stderr, "soak: %s page %p: %lu bad bytes\n", who, pg, bad);
}

static bool done(uint64_t target)
{
	if (atomic_load(&touched) >= target)
		atomic_store(&stop, 1);
	return atomic_load(&stop);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	size_t n = w->bytes / PAGE;
	uint64_t seed = w->id * 7919 + 1;
	unsigned long writes = 0;

	while (!atomic_load(&stop)) {
		size_t i = xs(&seed) % n;
		uint64_t tag =
		    ((uint64_t)w->id << 48) | ((uint64_t)i << 20) | ((writes & 0xfffff) | 1);

		pthread_rwlock_rdlock(&fork_lock); /* a fork sees whole pages and matching tags */
		w->tags[i] = tag;
		write_page(w->area + i * WORDS, tag);
		pthread_rwlock_unlock(&fork_lock);
		if (++writes % 256 == 0)
			for (size_t k = 0; k < n; k++) {
				account("writer", w->area + k * WORDS,
					check_page(w->area + k * WORDS, w->tags[k]));
				atomic_fetch_add(&verified, 1);
			}
	}
	return NULL;
}

static void *churner_main(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 104729 + 3;

	while (!atomic_load(&stop)) {
		size_t len = (1 + xs(&seed) % 4) * HPAGE, n = len / PAGE;
		uint64_t *a =
		    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		size_t d0 = xs(&seed) % n, dn = 1 + xs(&seed) % (n - d0), cut = n / 2;

		if (a == MAP_FAILED)
			continue;
		for (size_t k = 0; k < n; k++)
			write_page(a + k * WORDS, seed + k);
		madvise(a + d0 * WORDS, dn * PAGE, MADV_DONTNEED);
		for (size_t k = 0; k < n; k++) {
			bool freed = k >= d0 && k < d0 + dn;

			account("churner", a + k * WORDS,
				check_page(a + k * WORDS, freed ? 0 : seed + k));
		}
		munmap(a, cut * PAGE);
		for (size_t k = cut; k < n; k++)
			if (!(k >= d0 && k < d0 + dn))
				account("churner(tail)", a + k * WORDS,
					check_page(a + k * WORDS, seed + k));
		munmap(a + cut * WORDS, (n - cut) * PAGE);
		atomic_fetch_add(&churned, 1);
	}
	return NULL;
}

/* Grow (may move), shrink, and move a part of a filled region; verify after each step. */
static void *remapper_main(void *arg)
{
	uint64_t seed = 77;

	(void)arg;
	while (!atomic_load(&stop)) {
		size_t n = (1 + xs(&seed) % 3) * (HPAGE / PAGE), grow = n * 2, part = n / 4;
		uint64_t *a = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
			 *b, *c;

		if (a == MAP_FAILED)
			continue;
		for (size_t k = 0; k < n; k++)
			write_page(a + k * WORDS, seed + k);
		b = mremap(a, n * PAGE, grow * PAGE, MREMAP_MAYMOVE);
		if (b == MAP_FAILED) {
			munmap(a, n * PAGE);
			continue;
		}
		for (size_t k = 0; k < grow; k++)
			account("remap(grown)", b + k * WORDS,
				check_page(b + k * WORDS, k < n ? seed + k : 0));
		b = mremap(b, grow * PAGE, n * PAGE, 0);
		for (size_t k = 0; k < n; k++)
			account("remap(shrunk)", b + k * WORDS,
				check_page(b + k * WORDS, seed + k));
		/* move the last quarter elsewhere: the rest stays */
		c = mremap(b + (n - part) * WORDS, part * PAGE, part * PAGE,
			   MREMAP_MAYMOVE | MREMAP_FIXED,
			   mmap(NULL, part * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		if (c != MAP_FAILED) {
			for (size_t k = 0; k < part; k++)
				account("remap(moved)", c + k * WORDS,
					check_page(c + k * WORDS, seed + n - part + k));
			munmap(c, part * PAGE);
		}
		for (size_t k = 0; k < n - part; k++)
			account("remap(kept)", b + k * WORDS, check_page(b + k * WORDS, seed + k));
		munmap(b, n * PAGE);
		seed = xs(&seed);
		atomic_fetch_add(&remapped, 1);
	}
	return NULL;
}

static void *huge_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		size_t len = 4 * HPAGE;
		char *p =
		    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			continue;
		madvise(p, len, MADV_HUGEPAGE);
		for (size_t off = 0; off < len; off += HPAGE)
			p[off] = 1;
		atomic_fetch_add(&touched, len / 512);
		if (p[HPAGE + 5])
			account("huge", p, 1);
		munmap(p, len);
		atomic_fetch_add(&huge_rounds, 1);
	}
	return NULL;
}

/* In a child: every writer page as the tags say (the parent's copy at fork time). */
static unsigned long verify_all(unsigned long *pages)
{
	unsigned long bad = 0;

	for (unsigned w = 0; w < nwriters; w++)
		for (size_t k = 0; k < writers[w].bytes / PAGE; k++) {
			bad += check_page(writers[w].area + k * WORDS, writers[w].tags[k]);
			(*pages)++;
		}
	return bad;
}

static void *forker_main(void *arg)
{
	int kind = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		int pfd[2], st;
		unsigned long msg[2] = {0, 0};
		pid_t pid;

		if (pipe(pfd) < 0)
			break;
		pthread_rwlock_wrlock(&fork_lock);
		pid = fork();
		pthread_rwlock_unlock(&fork_lock);
		if (pid == 0) {
			close(pfd[0]);
			if (kind == 2 && getuid() == 0 &&
			    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
			     setresuid(65534, 65534, 65534) < 0))
				_exit(3);
			msg[0] = verify_all(&msg[1]);
			if (write(pfd[1], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
				_exit(4);
			if (kind == 1)
				execl("/bin/true", "true", (char *)NULL);
			_exit(msg[0] ? 1 : 0);
		}
		close(pfd[1]);
		if (pid > 0) {
			if (read(pfd[0], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
				msg[0] = 1; /* a child that could not report counts as a failure */
			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || (WEXITSTATUS(st) != 0 && !(kind != 1 && msg[0])))
				msg[0] += 1;
			atomic_fetch_add(&children, 1);
			atomic_fetch_add(&child_bad, msg[0]);
			atomic_fetch_add(&child_pages, msg[1]);
			if (msg[0] && atomic_fetch_add(&reported, 1) < 8)
				fprintf(stderr, "soak: child of kind %d found %lu bad bytes\n",
					kind, msg[0]);
		}
		close(pfd[0]);
		kind = (kind + 1) % 3;
		usleep(20000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double gb = argc > 1 ? atof(argv[1]) : 1;
	unsigned nc = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
	size_t mb = argc > 4 ? (size_t)atoi(argv[4]) : 8;
	uint64_t target = (uint64_t)(gb * (1ULL << 30));
	pthread_t *th;
	unsigned nth = 0;

	nwriters = argc > 2 ? (unsigned)atoi(argv[2]) : 4;
	writers = calloc(nwriters, sizeof(*writers));
	th = calloc(nc + 3, sizeof(*th));
	if (!writers || !th)
		return 2;
	for (unsigned i = 0; i < nwriters; i++) {
		struct writer *w = &writers[i];

		*w = (struct writer){.id = i + 1, .bytes = mb << 20, .huge = i % 2};
		w->area = mmap(NULL, w->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		w->tags = calloc(w->bytes / PAGE, sizeof(uint64_t));
		if (w->area == MAP_FAILED || !w->tags)
			return 2;
		if (w->huge)
			madvise(w->area, w->bytes, MADV_HUGEPAGE);
		pthread_create(&w->th, NULL, writer_main, w);
	}
	for (unsigned i = 0; i < nc; i++)
		pthread_create(&th[nth++], NULL, churner_main, (void *)(uintptr_t)(i + 1));
	pthread_create(&th[nth++], NULL, remapper_main, NULL);
	pthread_create(&th[nth++], NULL, huge_main, NULL);
	pthread_create(&th[nth++], NULL, forker_main, NULL);
	while (!done(target))
		usleep(100000);
	for (unsigned i = 0; i < nwriters; i++)
		pthread_join(writers[i].th, NULL);
	for (unsigned i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	printf("soak: touched_gb=%.2f verified_pages=%llu churn_rounds=%llu remap_rounds=%llu "
	       "huge_rounds=%llu children=%llu child_verified_pages=%llu child_bad_bytes=%llu "
	       "corrupted_bytes=%llu\n",
	       (double)atomic_load(&touched) / (1 << 30), (unsigned long long)verified,
	       (unsigned long long)churned, (unsigned long long)remapped,
	       (unsigned long long)huge_rounds, (unsigned long long)children,
	       (unsigned long long)child_pages, (unsigned long long)child_bad,
	       (unsigned long long)corrupted);
	return corrupted || child_bad ? 1 : 0;
}
