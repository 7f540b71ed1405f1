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
 *  - neither the directory nor the file is on a pseudo file system (proc, sysfs, debugfs,
 *    tracefs, cgroup, securityfs, bpf, ... by statfs f_type: their "files" are the kernel's
 *    interfaces), and an existing file is one we may write (faccessat W_OK);
 *  - outfile_open (an output streamed in place: a trace) opens it O_NOFOLLOW | O_CREAT |
 *    O_CLOEXEC | O_NONBLOCK and *without* O_TRUNC, checks it through the descriptor (fstat:
 *    regular, ours, one link), and only then truncates it: a file that fails the checks is left
 *    untouched. If the output cannot be completed, outfile_remove takes the partial file away
 *    (if the name is still that file);
 *  - outfile_create (an output written whole: a report, JSON, HTML) writes a new file
 *    DIR/.NAME.thpemu-XXXXXXXX beside the destination (O_EXCL | O_NOFOLLOW, a random name, the
 *    destination's permissions if it exists) and outfile_commit renames it over the destination
 *    once every byte is written and fsync'ed, after checking the destination again: the
 *    destination is always either its previous self or complete, never a partial file (a write
 *    error or a full disk leaves it as it was and removes the temporary file; a SIGKILL mid-way
 *    leaves the temporary file). rename(2) replaces a name and never follows a link there.
 *
 * Refusals are one line, "'PATH': why" (the path escaped, util/text.h), for the caller to prefix
 * with the option's name. Only system calls (core/util/sys.h) and snprintf are used: no stdio
 * stream but outfile_fopen's, no allocation but fdopen's, no exit, errno left as it was; so the
 * preload library can use these at init and exit too.
 */
#ifndef THPEMU_UTIL_OUTFILE_H
#define THPEMU_UTIL_OUTFILE_H

#include <limits.h>
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

/* Remove path if it still names the file fd has open (a streamed output that could not be
 * completed). 0, or -errno (-ENOENT: it names something else now, left alone). */
int outfile_remove(const char *path, int fd);

/* An output written whole and then put in place (see above). */
struct outfile {
	int fd;		     /* the temporary file (for /dev/null: the device) */
	int mode;	     /* the permissions to give it (the destination's), -1: as created */
	char path[PATH_MAX]; /* the destination */
	char tmp[PATH_MAX];  /* the temporary file ("" for /dev/null, or once done) */
};

/* Check path (the rules above) and create the temporary file. 0, or -errno with err set and
 * nothing created. */
int outfile_create(struct outfile *o, const char *path, char *err, size_t errlen);
/* Write all of buf. 0, or -errno with err set ("'PATH': cannot be written (why)"). */
int outfile_write(struct outfile *o, const void *buf, size_t len, char *err, size_t errlen);
/* fsync, close, check the destination again and rename the temporary file over it. 0, or -errno
 * with err set and the temporary file removed (the destination left as it was). */
int outfile_commit(struct outfile *o, char *err, size_t errlen);
/* Give up: close and remove the temporary file (the destination left as it was). */
void outfile_abort(struct outfile *o);

#endif
