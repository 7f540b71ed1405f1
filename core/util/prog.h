/* What the thpemu programs (thpemu, its commands and the machine host) share: one-line messages
 * and finding the executable's own directory.
 *
 * Messages are one line: the formatted message is escaped as a whole (util/text.h), so a value
 * with a newline or a terminal control sequence in it cannot break it up. */
#ifndef THPEMU_UTIL_PROG_H
#define THPEMU_UTIL_PROG_H

#include <stddef.h>

/* Print "thpemu CMD: MESSAGE" to stderr and exit(2). */
__attribute__((noreturn, format(printf, 2, 3))) void prog_usage_error(const char *cmd,
								      const char *fmt, ...);
/* Print "thpemu CMD: MESSAGE" to stderr (runtime errors; caller decides the status). */
__attribute__((format(printf, 2, 3))) void prog_error(const char *cmd, const char *fmt, ...);
/* A value escaped for echoing on stdout or stderr outside these (a ring of 8 static buffers:
 * up to 8 may be used in one call). */
const char *prog_esc(const char *s);

/* Directory holding the thpemu executable (to find thpemu-fusedev, thpemu-replayer beside it). */
const char *prog_self_dir(void);
/* A library of thpemu's own (libthpemu.so) found relative to the executable: beside it (the build
 * tree) or in ../lib/thpemu (an installed tree, wherever it was installed or copied to). 0 with
 * the path in buf, or -1 with both places tried in why. */
int prog_find_lib(const char *name, char *buf, size_t len, char *why, size_t whylen);

#endif
