/* Not a plugin: a shared object whose loading is the event. Its constructor writes the loading
 * process's pid to $THPEMU_TEST_MARKER, so a test can tell that nothing loaded it (a policy
 * plugin= offered by a process that is not the machine's daemon). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void)
{
	const char *path = getenv("THPEMU_TEST_MARKER");
	char line[32];
	int fd, n;

	if (!path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}
