/* The guest side of an oracle boot: its /init and the initramfs that carries it.
 *
 * The initramfs (a newc cpio, cpio.c) holds busybox (Debian's busybox-static: the guest has no
 * libc), /init, the workload under /wl, for a disk the modules under /modules with their load
 * order, and when asked the static thpemu-snapshot as /bin/thpemu-snapshot (the workload runs
 * it where OSNAP= on the command line says: $ORACLE_SNAPSHOT, $ORACLE_SNAPSHOT_AT; a program
 * outside the suite does not, so for one the static suite comes too, as /bin/thpemu-wl, and /init
 * has it print the snapshot before the program starts: `thpemu-wl --snapshot-start`). It depends on
 * the run only (kernel and workload), never on a boot's settings or seed: those reach /init on the
 * kernel command line (qemu.c), so the same bytes serve every boot of a run.
 *
 * /init speaks the line protocol of result.h on the console: what the kernel is, each setting
 * applied, the knobs read back, /proc/meminfo, a snapshot of /proc/vmstat and the per-size mTHP
 * stats before and after the workload, the workload's exit status, and "ORACLE end" last.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "oracle/cpio.h"
#include "oracle/oracle.h"

/* %s: the knob keys read back (settings.c's table). */
static const char init_fmt[] =
    "#!/bin/busybox sh\n"
    "# thpemu oracle guest init, written by thpemu (core/oracle/guest.c). Settings arrive on\n"
    "# the kernel command line; results leave as ORACLE lines on the console.\n"
    "/bin/busybox mkdir -p /proc /sys /dev /tmp /mnt/disk /usr/bin /usr/sbin /sbin\n"
    "/bin/busybox mount -t proc proc /proc\n"
    "/bin/busybox mount -t sysfs sysfs /sys\n"
    "/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null\n"
    "/bin/busybox --install -s\n"
    "export PATH=/bin:/sbin:/usr/bin:/usr/sbin\n"
    "T=/sys/kernel/mm/transparent_hugepage\n"
    "say() { echo \"ORACLE $*\"; }\n"
    "path_of() {\n"
    "\tcase $1 in\n"
    "\tvm.*) echo /proc/sys/vm/${1#vm.} ;;\n"
    "\tkernel.*) echo /proc/sys/kernel/${1#kernel.} ;;\n"
    "\ttmpfs.huge) echo /dev/shm ;;\n"
    "\thugepages-*/*) echo $T/$1 ;;\n"
    "\thugepages-*) echo $T/$1/enabled ;;\n"
    "\t*) echo $T/$1 ;;\n"
    "\tesac\n"
    "}\n"
    "apply() {\n"
    "\tif [ \"$1\" = tmpfs.huge ]; then\n"
    "\t\tmkdir -p /dev/shm && mount -t tmpfs -o huge=$2 tmpfs /dev/shm &&\n"
    "\t\t\tsay setting $1 ok || say setting $1 failed\n"
    "\t\treturn\n"
    "\tfi\n"
    "\tp=$(path_of \"$1\")\n"
    "\tif [ ! -e \"$p\" ]; then say setting \"$1\" absent; return; fi\n"
    "\tif echo \"$2\" 2>/dev/null >\"$p\"; then say setting \"$1\" ok\n"
    "\telse say setting \"$1\" failed; fi\n"
    "}\n"
    "snap() {\n"
    "\twhile read k v; do say snap $1 vmstat $k $v; done </proc/vmstat\n"
    "\tfor d in $T/hugepages-*kB; do\n"
    "\t\t[ -d $d/stats ] || continue\n"
    "\t\tfor f in $d/stats/*; do\n"
    "\t\t\tread v <$f && say snap $1 mthp ${d##*/hugepages-} ${f##*/} $v\n"
    "\t\tdone\n"
    "\tdone\n"
    "}\n"
    "say hello 1\n"
    "say kernel $(uname -r)\n"
    "read up idle </proc/uptime\n"
    "say uptime $up\n"
    "IFS=,\n"
    "for kv in $OSET; do IFS=' '; apply \"${kv%%%%:*}\" \"${kv#*:}\"; IFS=,; done\n"
    "IFS=' '\n"
    "for k in %s; do\n"
    "\tp=$(path_of $k)\n"
    "\t[ -f $p ] && [ -r $p ] && say knob $k $(cat $p)\n"
    "done\n"
    "# tmpfs.huge: the mount's huge= (shmem_show_options prints it unless never)\n"
    "while read dev mnt fs opts rest; do\n"
    "\t[ \"$mnt $fs\" = \"/dev/shm tmpfs\" ] || continue\n"
    "\th=never\n"
    "\tcase ,$opts, in *,huge=*) h=${opts##*huge=}; h=${h%%%%,*} ;; esac\n"
    "\tsay knob tmpfs.huge $h\n"
    "done </proc/mounts\n"
    "if [ \"$ODISK\" = 1 ]; then\n"
    "\twhile read m; do insmod /modules/$m.ko || say disk-error insmod $m; done "
    "</modules/order\n"
    "\ti=0\n"
    "\twhile [ ! -b /dev/vda ] && [ $i -lt 100 ]; do usleep 100000; i=$((i+1)); done\n"
    "\tif mkdosfs /dev/vda >/dev/null && mount -t vfat /dev/vda /mnt/disk; then\n"
    "\t\texport ORACLE_DISK=/mnt/disk; say disk /mnt/disk\n"
    "\telse say disk-error mount; fi\n"
    "fi\n"
    "while read k v u; do say meminfo ${k%%:} $v; done </proc/meminfo\n"
    "set --\n"
    "i=0\n"
    "while eval \"[ \\\"\\${OA$i+x}\\\" = x ]\"; do\n"
    "\teval \"set -- \\\"\\$@\\\" \\\"\\$OA$i\\\"\"; i=$((i+1))\n"
    "done\n"
    "export ORACLE_SEED=$OSEED ORACLE_COUNTERS=1\n"
    "if [ -n \"$OSNAP\" ]; then\n"
    "\texport ORACLE_SNAPSHOT=/bin/thpemu-snapshot ORACLE_SNAPSHOT_AT=$OSNAP\n"
    "\t[ -x /bin/thpemu-wl ] && /bin/thpemu-wl --snapshot-start\n"
    "fi\n"
    "snap program-begin\n"
    "read up idle </proc/uptime\n"
    "say start $up\n"
    "/wl/$OW \"$@\"\n"
    "rc=$?\n"
    "read up idle </proc/uptime\n"
    "say exit $rc $up\n"
    "snap program-end\n"
    "say end\n"
    "poweroff -f\n";

int oracle_init_script(char *buf, size_t len)
{
	char keys[2048];
	size_t used = 0;
	int n;

	keys[0] = '\0';
	for (size_t i = 0; oracle_knob(i); i++) {
		n = snprintf(keys + used, sizeof(keys) - used, "%s%s", used ? " " : "",
			     oracle_knob(i)->key);
		if (n < 0 || (size_t)n >= sizeof(keys) - used)
			return -E2BIG;
		used += (size_t)n;
	}
	n = snprintf(buf, len, init_fmt, keys);
	return n < 0 || (size_t)n >= len ? -E2BIG : n;
}

static int add_modules(struct cpio_w *w, const struct oracle_modules *m)
{
	char order[ORACLE_MAX_MODULES * 65] = "", path[128];
	size_t used = 0;

	cpio_dir(w, "modules", 0755);
	for (int i = 0; i < m->n; i++) {
		snprintf(path, sizeof(path), "modules/%s.ko", m->name[i]);
		cpio_copy(w, path, 0644, m->path[i]);
		used += (size_t)snprintf(order + used, sizeof(order) - used, "%s\n", m->name[i]);
	}
	return cpio_file(w, "modules/order", 0644, order, used);
}

int oracle_initramfs_write(const char *out, const struct oracle_guest *g, char *err, size_t errlen)
{
	char script[8192], wl[128];
	struct cpio_w w;
	FILE *f;
	int rc, n;

	n = oracle_init_script(script, sizeof(script));
	if (n < 0) {
		snprintf(err, errlen, "the guest's /init does not fit");
		return n;
	}
	f = fopen(out, "we");
	if (!f) {
		snprintf(err, errlen, "'%s': %s", out, strerror(errno));
		return -errno;
	}
	cpio_init(&w, f);
	cpio_dir(&w, "bin", 0755);
	cpio_dir(&w, "dev", 0755);
	cpio_node(&w, "dev/console", S_IFCHR | 0600, 5, 1);
	cpio_node(&w, "dev/null", S_IFCHR | 0666, 1, 3);
	cpio_dir(&w, "proc", 0755);
	cpio_dir(&w, "sys", 0755);
	cpio_dir(&w, "tmp", 01777);
	cpio_dir(&w, "wl", 0755);
	rc = cpio_copy(&w, "bin/busybox", 0755, g->busybox);
	if (rc) {
		snprintf(err, errlen, "busybox '%s': %s", g->busybox, strerror(-rc));
		goto out_close;
	}
	cpio_file(&w, "init", 0755, script, (size_t)n);
	snprintf(wl, sizeof(wl), "wl/%s", g->workload_name);
	rc = cpio_copy(&w, wl, 0755, g->workload);
	if (rc) {
		snprintf(err, errlen, "workload '%s': %s", g->workload, strerror(-rc));
		goto out_close;
	}
	if (g->snapshot) {
		rc = cpio_copy(&w, "bin/thpemu-snapshot", 0755, g->snapshot);
		if (rc) {
			snprintf(err, errlen, "thpemu-snapshot '%s': %s", g->snapshot,
				 strerror(-rc));
			goto out_close;
		}
	}
	if (g->snapshot && g->snapshot_wl) {
		rc = cpio_copy(&w, "bin/thpemu-wl", 0755, g->snapshot_wl);
		if (rc) {
			snprintf(err, errlen, "thpemu-wl '%s': %s", g->snapshot_wl, strerror(-rc));
			goto out_close;
		}
	}
	if (g->modules && g->modules->n)
		add_modules(&w, g->modules);
	rc = cpio_finish(&w);
	if (rc)
		snprintf(err, errlen, "'%s': %s", out, strerror(-rc));
out_close:
	if (fclose(f) && !rc) {
		rc = -errno;
		snprintf(err, errlen, "'%s': %s", out, strerror(errno));
	}
	return rc;
}
