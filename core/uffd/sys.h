/* The raw system calls moved to core/sys/sys.h (one layer for uffd, io, obs and shim). */
#include "sys/sys.h"
