/* The records a process leaves in the run directory (core/live/report.c): a pid's earlier
 * programs' records are kept beside its new one, and told from those of an earlier process that
 * had the pid. The run report itself is tested by report_run. */
#include "harness.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "live/uffd.h"

static struct uffd_stats *new_stats(int pid, int ppid, const char *comm, const char *exe)
{
	struct uffd_stats *st = calloc(1, sizeof(*st));

	ASSERT(st != NULL);
	obs_faults_init(&st->faults);
	st->magic = UFFD_STATS_MAGIC;
	st->version = UFFD_STATS_VERSION;
	st->size = sizeof(*st);
	st->pid = pid;
	st->ppid = ppid;
	snprintf(st->comm, sizeof(st->comm), "%s", comm);
	snprintf(st->exe, sizeof(st->exe), "%s", exe);
	snprintf(st->cmdline, sizeof(st->cmdline), "%s --arg", exe);
	return st;
}

static uint32_t state_of(const char *path)
{
	struct uffd_stats head;
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? pread(fd, &head, sizeof(head), 0) : -1;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)sizeof(head) ? head.state : 99;
}

static void write_record(const char *dir, int pid, uint32_t state)
{
	struct uffd_stats *st = new_stats(pid, 1, "x", "/bin/x");
	char path[512];
	FILE *f;

	st->state = state;
	snprintf(path, sizeof(path), "%s/%d.stats", dir, pid);
	f = fopen(path, "w");
	ASSERT(f != NULL);
	ASSERT_EQ(fwrite(st, sizeof(*st), 1, f), 1);
	fclose(f);
	free(st);
}

TEST(keep_previous_tells_exec_from_a_reused_pid)
{
	char dir[] = "/tmp/uffd_report.XXXXXX", path[512];

	ASSERT(mkdtemp(dir) != NULL);
	/* a program that exec'd (its exit hook never ran): an earlier program of the process */
	write_record(dir, 500, UFFD_PROC_RUNNING);
	uffd_stats_keep_previous(dir, 500);
	snprintf(path, sizeof(path), "%s/500.e1.stats", dir);
	EXPECT_EQ(state_of(path), UFFD_PROC_EXECED);
	/* a process that exited: another process had the pid before; it stays a process */
	write_record(dir, 500, UFFD_PROC_EXITED);
	uffd_stats_keep_previous(dir, 500);
	snprintf(path, sizeof(path), "%s/500.e2.stats", dir);
	EXPECT_EQ(state_of(path), UFFD_PROC_EXITED);
	snprintf(path, sizeof(path), "%s/500.stats", dir);
	EXPECT(access(path, F_OK) != 0);
	for (int i = 1; i <= 2; i++) {
		snprintf(path, sizeof(path), "%s/500.e%d.stats", dir, i);
		unlink(path);
	}
	rmdir(dir);
}

TEST_MAIN()
