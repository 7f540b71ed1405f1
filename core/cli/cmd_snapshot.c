/* thpemu snapshot: a snapshot of this machine's physical memory (core/snapshot: the command is
 * shared with the static thpemu-snapshot a guest runs). */
#include "cli/cli.h"
#include "snapshot/snapshot.h"

static int snapshot_main(int argc, char **argv)
{
	return snap_command(argc, argv, "thpemu snapshot");
}

CLI_COMMAND(snapshot, "snapshot",
	    "write a snapshot of this machine's physical memory, for --fragment snapshot:FILE "
	    "(root)",
	    snapshot_main)
