/* Drop root the way setpriv and many daemons do: keep capabilities across the uid change
 * (PR_SET_KEEPCAPS), setresuid, raise CAP_SETGID again (capset), setresgid and setgroups, then drop
 * every capability. glibc makes set*id process-wide by running them on every thread and aborts if
 * any thread disagrees; capset and PR_SET_KEEPCAPS are per thread, so natively this works only
 * while the process has one thread (the program starts its threads afterwards, as daemons do).
 * Under the emulator its threads are there from the start: they must follow, so that afterwards
 * every thread of the process holds the same credentials; memory must still work, also from a
 * thread started after the drop.
 *
 * Output: "dropped: uid=U gid=G threads=N agree=N" and "memory: ok"; exit 1 on disagreement.
 *
 *   setid_threads [UID [GID]]          (run as root)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

int capset(void *hdr, const void *data);

static volatile int stop;

static void *idle(void *arg)
{
	(void)arg;
	while (!stop)
		usleep(1000);
	return NULL;
}

static int set_caps(unsigned eff, unsigned perm)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2] = {{eff, perm, 0}, {0, 0, 0}};

	return capset(&h, d);
}

/* The Uid:, Gid:, Groups: and CapEff: lines of a task's status. */
static void creds_of(const char *tid, char *out, size_t len)
{
	char path[300], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	out[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Uid:", 4) || !strncmp(line, "Gid:", 4) ||
		    !strncmp(line, "Groups:", 7) || !strncmp(line, "CapEff:", 7) ||
		    !strncmp(line, "CapPrm:", 7))
			strncat(out, line, len - strlen(out) - 1);
	fclose(f);
}

int main(int argc, char **argv)
{
	uid_t uid = argc > 1 ? (uid_t)atoi(argv[1]) : 65534;
	gid_t gid = argc > 2 ? (gid_t)atoi(argv[2]) : 65534;
	unsigned setid = (1U << CAP_SETUID) | (1U << CAP_SETGID);
	char first[1024] = "", cur[1024];
	unsigned threads = 0, agree = 0;
	pthread_t th[2];
	struct dirent *d;
	size_t len = 32 << 20;
	char *p;
	DIR *dir;

	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setresuid(uid, uid, uid) < 0 ||
	    set_caps(setid, setid) < 0 || setresgid(gid, gid, gid) < 0 || setgroups(0, NULL) < 0 ||
	    set_caps(0, 0) < 0) {
		perror("setid_threads: dropping root");
		return 2;
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, idle, NULL);
	dir = opendir("/proc/self/task");
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		creds_of(d->d_name, cur, sizeof(cur));
		if (!cur[0])
			continue; /* gone meanwhile */
		if (!first[0])
			strcpy(first, cur);
		threads++;
		agree += strcmp(first, cur) == 0;
	}
	if (dir)
		closedir(dir);
	printf("dropped: uid=%d gid=%d threads=%u agree=%u\n", (int)getuid(), (int)getgid(),
	       threads, agree);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 2;
	for (size_t off = 0; off < len; off += 4096)
		p[off] = (char)(off >> 12);
	for (size_t off = 0; off < len; off += 4096)
		if (p[off] != (char)(off >> 12))
			return 3;
	puts("memory: ok");
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return threads && agree == threads ? 0 : 1;
}
