/* Output files thpemu writes (reports, traces, JSON, HTML, stall reports, kept run directories),
 * created so that nobody else can redirect them.
 *
 * The threat: another user plants, where thpemu will write, a symbolic link (or a hard link, or
 * a FIFO) to a file of ours, so that thpemu -- often run as root -- overwrites it. The rules:
 *
 *  - the file, if it exists, is a regular file (never a symbolic link: it is not followed),
 *    owned by the effective uid, with one link (a second link may be someone else's name for
 *    it); or it is /dev/null (the null device, whatever its name: output discarded);
 *  - its directory exists, is a directory we can write, and, if anyone may write it (world
 *    writable, as /tmp), has the sticky bit (so nobody can swap our file once it is written);
 *  - every symbolic link on the way to the directory is one the kernel's fs.protected_symlinks
 *    would let us follow (not someone else's link in a sticky world-writable directory), whatever
 *    that sysctl says;
 *  - it is opened O_NOFOLLOW | O_CREAT | O_CLOEXEC | O_NONBLOCK and *without* O_TRUNC, checked
 *    through the descriptor (fstat: regular, ours, one link), and only then truncated: a file
 *    that fails the checks is left untouched.
 *
 * Refusals are one line, "'PATH': why" (the path escaped, util/text.h), for the caller to prefix
 * with the option's name. Only system calls (core/util/sys.h) and snprintf are used: no stdio
 * stream but outfile_fopen's, no allocation but fdopen's, no exit, errno left as it was; so the
 * preload library can use these at init and exit too.
 */
#ifndef THPEMU_UTIL_OUTFILE_H
#define THPEMU_UTIL_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

/* Validate path as an output file without creating anything. 0, or -errno with err set. */
int outfile_check(const char *path, char *err, size_t errlen);

/* Is dir fit to hold output files (the directory rules above)? 0, or -errno with err set
 * ("'DIR': the directory 'DIR' ..."). */
int outfile_check_dir(const char *dir, char *err, size_t errlen);

/* Open path for writing as above, truncated. The descriptor (close-on-exec), or -errno with err
 * set. */
int outfile_open(const char *path, char *err, size_t errlen);

/* outfile_open as a stdio stream ("w"), or NULL with err set. */
FILE *outfile_fopen(const char *path, char *err, size_t errlen);

/* A directory to put output files in (ab --keep DIR): created 0700 if it does not exist (its
 * parent checked as an output file's directory), otherwise it must be a directory (not a
 * symbolic link) owned by us and, if world-writable, sticky. 0, or -errno with err set. */
int outfile_dir(const char *path, char *err, size_t errlen);

/* Do two output paths name the same file (or the same place, if they do not exist yet)? */
int outfile_same(const char *a, const char *b);

#endif
