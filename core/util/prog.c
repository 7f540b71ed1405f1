/* The thpemu programs' common helpers: see prog.h. */
#include "util/prog.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/text.h"

/* "thpemu CMD: MESSAGE\n", the message escaped as a whole (prog.h). */
static void say(const char *cmd, const char *fmt, va_list ap)
{
	char msg[4096], esc[8192];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "thpemu %s: %s\n", cmd, text_escape(msg, esc, sizeof(esc)));
}

void prog_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(cmd, fmt, ap);
	va_end(ap);
	exit(2);
}

void prog_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(cmd, fmt, ap);
	va_end(ap);
}

const char *prog_esc(const char *s)
{
	static char ring[8][1024];
	static unsigned next;

	return text_escape(s, ring[next++ % 8], sizeof(ring[0]));
}

const char *prog_self_dir(void)
{
	static char dir[PATH_MAX];
	ssize_t n;
	char *slash;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0) {
		strcpy(dir, ".");
		return dir;
	}
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return dir;
}

int prog_find_lib(const char *name, char *buf, size_t len, char *why, size_t whylen)
{
	static const char *const rel[] = {"", "/../lib/thpemu"};
	char tried[2][PATH_MAX];

	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(tried[i], sizeof(tried[i]), "%s%s/%s", prog_self_dir(), rel[i], name);
		if (access(tried[i], R_OK) == 0) {
			snprintf(buf, len, "%s", tried[i]);
			return 0;
		}
	}
	snprintf(why, whylen, "cannot find %s (looked for %s and %s)", name, tried[0], tried[1]);
	return -1;
}
