/* A program with a userfaultfd of its own, as CRIU's lazy restore or QEMU's postcopy have: it
 * maps 8 MiB, registers it for missing faults, and a thread of its own fills every page it
 * faults on with a pattern (UFFDIO_COPY); the main thread reads the pages back. Prints what it
 * saw; exit 0 when the registration worked and every page held its pattern. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LEN  (8UL << 20)
#define PAGE 4096UL

static int uffd;
static uint8_t *area;
static unsigned long served;

static void *server(void *arg)
{
	static uint8_t page[PAGE] __attribute__((aligned(PAGE)));
	struct uffd_msg msg;

	(void)arg;
	for (;;) {
		struct pollfd p = {.fd = uffd, .events = POLLIN};
		struct uffdio_copy c;
		uintptr_t addr;

		if (poll(&p, 1, -1) < 0 || read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		addr = msg.arg.pagefault.address & ~(PAGE - 1);
		for (size_t i = 0; i < PAGE; i += sizeof(uint64_t))
			*(uint64_t *)(page + i) = addr + i;
		c = (struct uffdio_copy){.dst = addr, .src = (uintptr_t)page, .len = PAGE};
		if (ioctl(uffd, UFFDIO_COPY, &c) == 0)
			served++;
	}
	return NULL;
}

int main(void)
{
	struct uffdio_api api = {.api = UFFD_API};
	struct uffdio_register reg;
	unsigned long bad = 0;
	pthread_t t;

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0) {
		perror("userfaultfd");
		return 2;
	}
	area = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return 2;
	reg = (struct uffdio_register){.range = {(uintptr_t)area, LEN},
				       .mode = UFFDIO_REGISTER_MODE_MISSING};
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
		printf("UFFDIO_REGISTER: %s\n", strerror(errno));
		return 1;
	}
	printf("registered %lu MiB\n", LEN >> 20);
	pthread_create(&t, NULL, server, NULL);
	for (size_t off = 0; off < LEN; off += PAGE)
		bad += *(uint64_t *)(area + off + 8) != (uintptr_t)area + off + 8;
	printf("pages read %lu, bad %lu\n", LEN / PAGE, bad);
	return bad ? 1 : 0;
}
