/*
 * libthpemu-jemalloc.so: the allocator `thpemu run` preloads after libthpemu.so (--allocator
 * jemalloc), so that a glibc program's heap is managed: glibc's malloc maps its memory with its
 * internal __mmap, which no interposer sees; jemalloc maps through the PLT (core/live/README.md).
 *
 * It is Debian's jemalloc itself, the same version and build (libjemalloc-dev's PIC archive
 * libjemalloc_pic.a, which Debian makes from the objects of libjemalloc.so.2), linked without
 * the archive's C++ part: Debian's libjemalloc.so.2 carries jemalloc's operator new and delete
 * and so needs libstdc++ and libgcc_s, which cost every managed process about 1 ms of CPU
 * (mapping, relocating and starting them), C programs included. Without them a C++ program's new
 * and delete are libstdc++'s, which call malloc and free: jemalloc's all the same. libgcc's
 * unwinder (jemalloc's profiling backtraces, off unless MALLOC_CONF enables prof) is linked
 * statically. Its soname is Debian's, libjemalloc.so.2: a program linked with jemalloc is given
 * this one, already loaded, rather than loading a second jemalloc (core/CMakeLists.txt).
 *
 * Nothing here but the reference that pulls the archive's allocator (its member that defines
 * malloc, and what that needs) into the library; the exported names are jemalloc's own.
 */
#include <stdlib.h>

__attribute__((used)) static void *(*const thpemu_jemalloc_entry)(size_t) = malloc;
