/* thpemu-snapshot: `thpemu snapshot` as a program of its own, built static (it links libc and
 * the snapshot's own sources only), for a guest whose initramfs has no thpemu: the oracle copies
 * it in and runs it at the workload's start (core/snapshot/README.md, "In a guest"). */
#include "snapshot/snapshot.h"

int main(int argc, char **argv)
{
	return snap_command(argc, argv, "thpemu-snapshot");
}
