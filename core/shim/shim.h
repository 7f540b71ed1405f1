/* Internal interface between the interposers (shim.c) and the public API (api.c). */
#ifndef THPEMU_SHIM_H
#define THPEMU_SHIM_H

#include "uffd/uffd.h"

/* The process's emulator, or NULL when it runs unmanaged (or is a fork child). */
struct uffd_live *shim_live(void);

#endif
