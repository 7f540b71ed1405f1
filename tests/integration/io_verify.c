/* io_verify: check what the dirtier wrote to a device directory (thpemu-io.PID).
 *
 *   io_verify DIR SEED
 *
 * Every file the manifest lists as complete must hold the dirtier's pattern (seed, file,
 * offset) on every page; any other w*.dat file (still being written back when the program
 * ended, or failed) may have holes, but a page is either the pattern or zeros -- never someone
 * else's data or a page at the wrong offset. Prints "complete=N failed=N files=N pages=N
 * pattern_pages=N zero_pages=N" and exits 0, or names the first bad page and exits 1
 * (2: usage).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"

struct tally {
	unsigned long complete, failed, files;
	unsigned long long pages, pattern, zero;
};

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Check one file; strict: every page below `size` must be the pattern. */
static int check_file(const char *dir, const char *name, uint64_t seed, uint64_t size, bool strict,
		      struct tally *t)
{
	static unsigned char buf[IO_PAGE_SIZE];
	char path[4096];
	uint64_t id;
	ssize_t n;
	int fd;

	if (io_file_id_of(name, &id) < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "io_verify: %s: %s\n", path, strerror(errno));
		return -1;
	}
	t->files++;
	unsigned long long before = t->pages;

	for (uint64_t off = 0; size == 0 || off < size; off += IO_PAGE_SIZE) {
		n = pread(fd, buf, sizeof(buf), (off_t)off);
		if (n <= 0)
			break;
		t->pages++;
		if (n == IO_PAGE_SIZE &&
		    io_pattern_check(buf, seed, id, off, IO_PAGE_SIZE) == IO_PAGE_SIZE) {
			t->pattern++;
		} else if (!strict && all_zero(buf, (size_t)n)) {
			t->zero++;
		} else {
			fprintf(stderr, "io_verify: %s: page at %llu is %s\n", path,
				(unsigned long long)off, strict ? "not the pattern" : "garbage");
			close(fd);
			return -1;
		}
	}
	close(fd);
	if (strict && t->pages == before) {
		fprintf(stderr, "io_verify: %s is empty but listed as complete\n", path);
		return -1;
	}
	return 0;
}

/* Files the manifest lists as complete (name per line, NULL-terminated array). */
static int read_manifest(const char *dir, uint64_t seed, struct tally *t, char ***done,
			 size_t *ndone)
{
	char path[4096], name[256], status[32], **nd;
	unsigned long long size;
	int err;
	FILE *f;

	snprintf(path, sizeof(path), "%s/" IO_MANIFEST_NAME, dir);
	f = fopen(path, "r");
	if (!f)
		return 0; /* nothing finished yet */
	while (fscanf(f, "%255s %llu %31s %d", name, &size, status, &err) == 4) {
		if (strcmp(status, "complete")) {
			t->failed++;
			continue;
		}
		if (check_file(dir, name, seed, size, true, t) < 0) {
			fclose(f);
			return -1;
		}
		t->complete++;
		nd = realloc(*done, (*ndone + 1) * sizeof(**done));
		if (nd)
			*done = nd;
		if (!nd || !(nd[*ndone] = strdup(name))) {
			fprintf(stderr, "io_verify: out of memory\n");
			fclose(f);
			return -1;
		}
		(*ndone)++;
	}
	fclose(f);
	return 0;
}

static bool listed(char **done, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(done[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct tally t = {0};
	char **done = NULL;
	size_t ndone = 0;
	struct dirent *de;
	uint64_t seed;
	DIR *d;

	if (argc != 3) {
		fprintf(stderr, "usage: io_verify DIR SEED\n");
		return 2;
	}
	seed = strtoull(argv[2], NULL, 10);
	if (read_manifest(argv[1], seed, &t, &done, &ndone) < 0)
		return 1;
	d = opendir(argv[1]);
	if (!d) {
		fprintf(stderr, "io_verify: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] != 'w' || listed(done, ndone, de->d_name))
			continue;
		if (check_file(argv[1], de->d_name, seed, 0, false, &t) < 0) {
			closedir(d);
			return 1;
		}
	}
	closedir(d);
	printf("complete=%lu failed=%lu files=%lu pages=%llu pattern_pages=%llu zero_pages=%llu\n",
	       t.complete, t.failed, t.files, t.pages, t.pattern, t.zero);
	return 0;
}
