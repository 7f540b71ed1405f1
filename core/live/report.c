/* The process's own report (THPEMU_REPORT), written at exit with the report library
 * (core/report/run.h) whole or not at all, and the records an exec'd program leaves in the run
 * directory.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/outfile.h"
#include "util/sys.h"
#include "util/text.h"

void uffd_stats_keep_previous(const char *dir, int pid)
{
	char path[600], kept[640];
	uint32_t state = UFFD_PROC_EXECED;
	struct uffd_stats head;
	int fd;

	snprintf(path, sizeof(path), "%s/%d.stats", dir, pid);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	/* a record whose exit hook ran is of an earlier process with this pid: kept as it is */
	if (pread(fd, &head, offsetof(struct uffd_stats, exe), 0) ==
		(ssize_t)offsetof(struct uffd_stats, exe) &&
	    head.magic == UFFD_STATS_MAGIC && head.pid == pid && head.state != UFFD_PROC_EXITED &&
	    pwrite(fd, &state, sizeof(state), offsetof(struct uffd_stats, state)) < 0)
		state = 0; /* a record we cannot mark is still kept: counted as a process */
	sys_close(fd);
	for (int n = 1; n < 1000; n++) {
		snprintf(kept, sizeof(kept), "%s/%d.e%d.stats", dir, pid, n);
		if (renameat2(AT_FDCWD, path, AT_FDCWD, kept, RENAME_NOREPLACE) == 0 ||
		    errno != EEXIST)
			return;
	}
}

/* One line for a report that could not be written: first come, in the process's statistics,
 * where `thpemu run` finds it (says it and exits 1); without thpemu run, on stderr. */
static void report_failed(struct uffd_live *lv, const char *why)
{
	char *slot = uffd_live_stats(lv)->output_error;
	const int n = (int)sizeof(uffd_live_stats(lv)->output_error);

	if (!slot[0])
		snprintf(slot, (size_t)n, "%.*s", n - 1, why);
	if (!uffd_live_config(lv)->run_dir[0])
		fprintf(stderr, "thpemu: %s\n", why);
}

void uffd_report_write_file(struct uffd_live *lv, const char *path, const char *cmdline)
{
	char err[PATH_MAX + 200], msg[sizeof(err) + 120], esc[PATH_MAX];
	struct outfile o;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc = m ? 0 : -ENOMEM;

	if (m && uffd_live_report(lv, m, cmdline) < 0)
		rc = -ENOMEM;
	if (m && fclose(m) != 0)
		rc = -ENOMEM;
	if (rc < 0)
		snprintf(err, sizeof(err), "'%s': the report could not be made (out of memory)",
			 text_escape(path, esc, sizeof(esc)));
	if (rc == 0)
		rc = outfile_create(&o, path, err, sizeof(err));
	if (rc == 0 && (rc = outfile_write(&o, buf, len, err, sizeof(err))) < 0)
		outfile_abort(&o);
	else if (rc == 0)
		rc = outfile_commit(&o, err, sizeof(err));
	free(buf);
	if (rc == 0)
		return;
	snprintf(msg, sizeof(msg), "THPEMU_REPORT %s; an earlier file there is left as it was",
		 err);
	report_failed(lv, msg);
}
