/* Private temporary directories of thpemu run, thpemu ab and the machine daemon, and the
 * removal of those whose maker was killed (tmpdirs.c). */
#ifndef THPEMU_HOST_TMPDIRS_H
#define THPEMU_HOST_TMPDIRS_H

#include <stdbool.h>
#include <stddef.h>

/* TMPDIR/PREFIX.XXXXXX (mode 0700) holding a record of the command that made it (pid, process
 * start time, boot, pid namespace), so that a later command can tell a directory whose maker was
 * killed (SIGKILL leaves everything behind) from one in use, and remove it. */

/* Create one; 0, or -errno with err set (one line naming the path). */
int tmpdir_create(const char *prefix, char *dir, size_t len, char *err, size_t errlen);
/* Remove every TMPDIR/PREFIX.?????? of ours whose maker is provably dead: lazily unmounting
 * what is mounted under it (umount2 MNT_DETACH, or fusermount3 -u -z exec'd without a shell),
 * then removing the tree. Returns how many were removed. */
unsigned tmpdir_sweep(const char *prefix);
/* Remove a directory tree in-process (no shell, no symbolic link followed, no mount crossed).
 * 0, or -errno of the first failure (what could be removed is). */
int tmpdir_rmtree(const char *dir);
/* Field 22 (starttime: clock ticks since boot) and field 3 (state) of /proc/PID/stat; 0, or
 * -ENOENT: no such process. */
int tmpdir_proc_start(long pid, unsigned long long *start, char *state);
/* Is path a mount point (listed in /proc/self/mountinfo)? */
bool tmpdir_is_mounted(const char *path);
/* Detach the mount at path: umount2 MNT_DETACH, else fusermount3 -u -z (without root). */
void tmpdir_detach(const char *path);

#endif
