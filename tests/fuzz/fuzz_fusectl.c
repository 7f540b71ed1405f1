/* Fuzz target: fusedev's control file (fusedev/ctl.c): the text a write to .thpemu-control
 * carries, applied to a running device queue (fusedev/ioq.c, its completion thread included),
 * then both control files rendered as a read would. Each input starts from the default preset,
 * running. */
#include "fuzz.h"
#include "fusedev.h"

static struct fdev fs;

static void setup(void)
{
	fs.o.mountpoint = "/nonexistent/thpemu-fuzz";
	fs.o.seed = 1;
	if (devm_preset("usb2-stick-2011", &fs.o.dev) != 0 || fdev_ioq_start(&fs) != 0)
		abort();
	atomic_store(&fs.capacity, 1ULL << 30);
	pthread_mutex_init(&fs.ns_lock, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out;
	size_t len;

	if (!fs.q.started)
		setup();
	fdev_ioq_resume(&fs);
	FUZZ_CHECK(fdev_ioq_set(&fs, "preset", "usb2-stick-2011") == 0);
	(void)fdev_ctl_apply(&fs, (const char *)data, size);
	for (int k = FDEV_CTL; k <= FDEV_STATS; k++) {
		out = fdev_ctl_render(&fs, (enum fdev_kind)k, &len);
		FUZZ_CHECK(out && strlen(out) == len);
		free(out);
	}
	return 0;
}
