/* core/machine: one emulated machine shared by many real processes.
 *
 * The kernel has one pool of memory per machine, one page cache, one writeback engine; every
 * process faults against them. thpemu's machine is a shared-memory segment that holds exactly
 * that shared state - the pure model of core/mm (its struct and every array), the page-cache
 * data arena of core/io, the writeback wait queues - plus a process table. One process, the
 * *host* (`thpemu run`, or `thpemu machine start`), creates it and runs the machine's kernel
 * threads (kswapd/kcompactd, the flusher, the dirtier) and reaps dead processes; every managed
 * process *attaches* and serves its own faults in its own handler threads (UFFDIO_MOVE only
 * works from inside the faulting mm: fs/userfaultfd.c, "Do not allow cross-mm moves").
 *
 * Method.
 *  one address   the segment is a memfd mapped MAP_SHARED | MAP_FIXED_NOREPLACE at MACHINE_BASE
 *                in every process (a fork child inherits the mapping), so the absolute pointers
 *                core/mm stores inside it (frames, pageblocks, hash, ring) are valid
 *                everywhere. Only function pointers and per-process handles (mm's environment,
 *                descriptors) stay per process. A process that cannot map it there (the address
 *                is taken) cannot attach and runs unmanaged, saying so.
 *  rendezvous    a process attaches by the memfd's path, /proc/HOSTPID/fd/N, passed in
 *                THPEMU_MACHINE ("HOSTPID:N"); no file is ever created, so a dead host leaves
 *                no shared-memory object behind.
 *  the lock      mm's lock is one robust process-shared mutex in the segment. A process that
 *                dies holding it (SIGKILL, _exit of a thread mid-fault) leaves the next locker
 *                EOWNERDEAD: the lock's repair hook (the host's mm_repair) rebuilds the model
 *                from its frame descriptors and the machine goes on; if it cannot, the machine
 *                is *tainted* (machine_tainted) and its processes stop asking it.
 *  slots         every attached process has a slot 1..MACHINE_MAX_PROCS-1 (0 is the host). Its
 *                pages' owner cookies carry the slot (MACHINE_OWNER_SLOT), so the machine knows
 *                whose frame a frame is.
 *  mailboxes     nothing can unmap another process's page (process_madvise refuses
 *                MADV_DONTNEED; UFFDIO_MOVE is EINVAL across mms), so compaction run by process A
 *                (or by the host's kcompactd) that migrates B's page *asks* B: one request at a
 *                time per slot, answered by B's agent thread; the requester waits on a shared
 *                futex, bounded (a stopped B makes the page busy, as an unisolatable page).
 *  death         the host watches every slot's process (pidfd); when one is gone its frames go
 *                back to the pool (mm_release_owners) and pending requests to it fail -ENOENT.
 *  host death    the host holds a robust mutex of the header (host_alive) from creation to
 *                destruction; the kernel marks it FUTEX_OWNER_DIED when the host dies
 *                (kernel/futex/core.c: exit_robust_list, handle_futex_death), so every process
 *                sees a dead host by reading one word (machine_host_gone): no descriptor, and a
 *                reused pid cannot fool it. What only the host completes (writeback, a request
 *                to slot 0) is waited for in bounded slices that look at it.
 *
 * Futexes in the segment are shared (no FUTEX_PRIVATE_FLAG): a private futex key is (mm,
 * address), and wake-ups between processes are lost.
 *
 * Errors: negative errno. Nothing here exits or aborts.
 */
#ifndef THPEMU_MACHINE_MACHINE_H
#define THPEMU_MACHINE_MACHINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where every process maps the segment. ThreadSanitizer keeps its own tables around 0x3f...
 * (instrumented accesses there fault), so a TSan build uses a spot in its application range. */
#if defined(__SANITIZE_THREAD__)
#define MACHINE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MACHINE_TSAN 1
#endif
#endif
#ifdef MACHINE_TSAN
#define MACHINE_BASE 0x004000000000ULL
#else
#define MACHINE_BASE 0x3f0000000000ULL
#endif
#define MACHINE_MAGIC	  0x544850454d554d31ULL /* "THPEMUM1" */
#define MACHINE_VERSION	  6
#define MACHINE_MAX_PROCS 256 /* slots, host included: 8 bits of an owner cookie */

/* Owner cookies of program pages carry their process's slot in bits 54..61 (core/mm leaves
 * bits 62 and 63 to FILE and FOREIGN; core/live keeps its region cookies below bit 54). */
#define MACHINE_OWNER_SLOT_SHIFT 54
#define MACHINE_OWNER_SLOT_MASK	 (0xffULL << MACHINE_OWNER_SLOT_SHIFT)
#define MACHINE_OWNER_SLOT(o)                                                                      \
	((unsigned)(((o)&MACHINE_OWNER_SLOT_MASK) >> MACHINE_OWNER_SLOT_SHIFT))
#define MACHINE_OWNER_WITH_SLOT(o, s)                                                              \
	(((o) & ~MACHINE_OWNER_SLOT_MASK) | ((uint64_t)(s) << MACHINE_OWNER_SLOT_SHIFT))

enum machine_slot_state {
	MACHINE_SLOT_FREE = 0,
	MACHINE_SLOT_LIVE,    /* attached and serving its mailbox */
	MACHINE_SLOT_EXITING, /* said goodbye (exit, detach); the host releases its frames */
	MACHINE_SLOT_DEAD,    /* the host found the process gone; releasing its frames */
	MACHINE_SLOT_TAKING,  /* being filled by its new process (pid first), not yet LIVE */
};

/* One request to a process's agent. */
enum machine_req_op {
	MACHINE_REQ_MIGRATE = 1, /* migrate page `owner` from frame `from` to frame `to` */
	/* (to the host) start writeback of dirty page-cache frame `from`; `to` is
	 * MACHINE_WRITEOUT_HELD when the requester took a request of the machine's 3.x request
	 * list for it (the host's then: -EAGAIN says it was freed, the page not written out) */
	MACHINE_REQ_WRITEOUT = 2,
	/* khugepaged visits the process: scan from address `owner` with budget `from` pages of
	 * progress; the answer is the progress (or -ENOENT) and the reply the address where the
	 * next visit resumes, | 1 when the visit passed the last range */
	MACHINE_REQ_KHUGEPAGED = 3,
	/* the THP shrinker: judge the THP whose extent's page 0 is `owner`, head frame `from`, and
	 * split it if underused (mm.h split_underused: 1, 0, -EAGAIN, -ENOENT) */
	MACHINE_REQ_SPLIT = 4,
};

#define MACHINE_WRITEOUT_HELD 1u

/* Requests are tagged: a request is pending while req_seq is odd, and req_seq is its tag. The
 * agent takes it by moving req_seq from the tag to tag + 1 (compare-and-swap), a requester that
 * gives up withdraws it by the same move: exactly one of them wins. An answer carries the tag it
 * answers in the same word as the result, so a late answer to a withdrawn request can never be
 * taken for the answer to a later one. */
struct machine_mailbox {
	pthread_mutex_t lock; /* robust, pshared: one requester at a time */
	uint32_t req_seq;     /* futex: odd = request `req_seq` pending; the agent waits on it */
	uint32_t resp_seq;    /* futex: bumped by every answer; the requester waits on it */
	uint32_t claimed;     /* tag of the request the agent took last */
	uint32_t op;
	uint32_t from, to;
	uint64_t owner;
	uint64_t answer;   /* tag << 32 | (uint32_t)rc of the last answer */
	uint64_t reply;	   /* a value the last answer carries (written before answer) */
	int32_t requester; /* pid, for stall reports ("waited on a page of pid N") */
};

#define MACHINE_SLOT_MEM 12

struct machine_slot {
	uint32_t state; /* enum machine_slot_state, atomic */
	int32_t pid;
	int32_t ppid;
	uint32_t gen; /* bumped every time the slot is taken */
	uint64_t start_ns;
	char comm[16];
	struct machine_mailbox mbox;
	/* the process's memory now, as it last counted it (its own layout: core/live/census.c);
	 * written by the process, read by the host, which sums the live slots over time */
	uint64_t mem[MACHINE_SLOT_MEM];
	char pad[64];
};

/* Real programs writing files on the machine's device: thpemu-fusedev joins the machine and
 * puts their WRITEs through its page cache (fusedev/writers.c). Counted there, atomically. */
struct machine_writers {
	uint64_t pages_dirtied; /* page-cache pages dirtied by writers' WRITEs */
	uint64_t bytes;		/* bytes those WRITEs carried */
	uint64_t skipped;	/* pages left out (pool exhausted, page locked too long) */
	uint64_t throttles;	/* balance_dirty_pages pauses of writers */
	uint64_t throttle_ns;
	uint64_t fsyncs; /* fsync/fdatasync that waited for the file's writeback */
	uint64_t fsync_timeouts;
	uint64_t dirty_max;	/* most dirty file pages in the pool a writer saw */
	uint64_t writeback_max; /* most file pages under writeback a writer saw */
};

/* Who dirtied a file's pages: a writer process noted per page-cache file id, so that a wait on
 * one of its pages under writeback can say whose page it was ("a page written by rsync (pid
 * 790) to f.tar"). Open addressing by file id; an entry is published by its file_id (release),
 * and a later writer of the same file overwrites the rest (a reader may see a torn name: it is
 * only for reports). */
#define MACHINE_FILES 1024
struct machine_file {
	uint64_t file_id; /* 0: empty */
	int32_t pid;
	char comm[16];
	char path[68];
};

/* Shared memory objects mapped by the machine's processes (core/live/shmem.c): the identity of
 * each (a file's device and inode; a MAP_SHARED anonymous mapping has none and is known by its
 * id alone, index + 1, which is mm's shmem object), and which slots map it. Changed under the
 * machine's lock, never with mm called inside it (mm takes the same lock). */
#define MACHINE_SHMEM_OBJECTS 256
enum machine_shmem_state {
	MACHINE_SHMEM_FREE,
	MACHINE_SHMEM_LIVE,
	MACHINE_SHMEM_RELEASING, /* its last mapping went: its frames are being freed */
};
struct machine_shmem {
	uint32_t state; /* enum machine_shmem_state */
	uint32_t anon;	/* 1: a MAP_SHARED anonymous object, gone with its last mapping */
	uint64_t dev, ino;
	uint64_t mappers[MACHINE_MAX_PROCS / 64]; /* bit per slot */
};

/* The segment's header. Everything after it is carved by machine_alloc (mm's metadata) and the
 * page-cache arena at arena_off. */
struct machine_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size; /* sizeof(struct machine_hdr): a mismatch means another build */
	uint64_t seg_size;
	int32_t host_pid;
	uint32_t tainted;   /* the model could not be repaired after a death: stop using it */
	uint64_t base;	    /* MACHINE_BASE of the host's build: a mismatch is another build */
	uint64_t repairs;   /* times the lock was found EOWNERDEAD and the model repaired */
	uint64_t reaped;    /* processes whose frames were released after they were gone */
	uint64_t alloc_off; /* bump allocator: next free byte */
	uint64_t alloc_end; /* ... up to here (then the arena) */
	uint64_t arena_off; /* page-cache data arena: pool_bytes, 4 KiB aligned */
	uint64_t arena_len;
	uint64_t mm_off;	 /* the struct mm (0 until the host created it) */
	uint64_t waitq_off;	 /* struct waitq of writeback waits (shared futexes) */
	uint64_t rqs_off;	 /* the 3.x request list (io/rqshare.h), 0 for the modern eras */
	pthread_mutex_t mm_lock; /* robust, pshared */
	uint32_t nslots_live;	 /* slots 1.. not FREE (taken by take, given back by reap) */
	uint32_t stopping;	 /* the host is stopping the machine (`thpemu machine stop`): every
				  * process steps aside (its agent sees it), none may join */
	pthread_mutex_t host_alive;	/* robust, pshared: held by the host's creating thread until
					 * machine_destroy (machine_host_gone) */
	struct machine_writers writers; /* real writers' page cache (thpemu-fusedev), atomic */
	/* the live processes' memory at its largest: the sum of their slots' mem with the highest
	 * score offered (machine_mem_offer), under mem_lock (a try-lock: an offer never waits) */
	uint32_t mem_lock;
	uint64_t mem_peak_score;
	uint64_t mem_peak[MACHINE_SLOT_MEM];
	char config[4096]; /* the host's configuration, THPEMU_* style "KEY=VALUE\n" lines */
	struct machine_slot slot[MACHINE_MAX_PROCS];
	struct machine_file files[MACHINE_FILES];
	struct machine_shmem shmem[MACHINE_SHMEM_OBJECTS];
};

struct machine {
	struct machine_hdr *hdr; /* == (void *)MACHINE_BASE */
	int fd;			 /* the memfd (host: kept; attacher: closed after mapping) */
	size_t len;
	bool host;
	/* EOWNERDEAD: repair the model (called with the lock held). 0: repaired; <0: taint. */
	int (*repair)(void *arg);
	void *repair_arg;
	/* Host only (machine_reap): a pidfd per slot, and the slot generation it was opened for. */
	int pidfd[MACHINE_MAX_PROCS];
	uint32_t pidfd_gen[MACHINE_MAX_PROCS];
};

struct machine_config {
	uint64_t meta_bytes;  /* room for mm's struct and metadata (machine_meta_bytes) */
	uint64_t arena_bytes; /* page-cache data arena (pool_bytes), 0 for none */
	const char *config;   /* copied into hdr->config (truncated to fit) */
};

/* Host: create the segment and map it at MACHINE_BASE. *out is filled in the caller's storage. */
int machine_create(const struct machine_config *cfg, struct machine *out, char *err, size_t errlen);
/* Host: unmap and close (attached processes keep their mappings: the memory lives until the
 * last one is gone). Call it on the thread that created the machine (it holds host_alive). */
void machine_destroy(struct machine *m);
/* The THPEMU_MACHINE value for processes the host starts ("PID:FD"). */
void machine_rendezvous(const struct machine *m, char *buf, size_t len);

/* Attach to the machine named by a THPEMU_MACHINE value. -EINVAL (not HOSTPID:FD), -ENOENT (the
 * host is gone), -EEXIST (the address is taken in this process), -EPROTO (not a machine's
 * segment, another build or version, or the segment of another host than HOSTPID), -errno of
 * opening /proc/HOSTPID/fd/FD (-EACCES: another user's, or another user namespace). */
int machine_attach(const char *rendezvous, struct machine *out, char *err, size_t errlen);
/* A fork child: the mapping was inherited; take a fresh struct machine for it (no descriptor).
 * Descriptors inherited from a host (memfd, pidfds) are close-on-exec and left alone. */
void machine_forked_child(struct machine *m);
void machine_detach(struct machine *m);

/* Bump allocation inside the segment (host only, before processes attach): zeroed memory that
 * costs nothing until touched, 64-byte aligned. NULL when the room is used up. */
void *machine_alloc(struct machine *m, size_t len);
/* Bytes of room core/mm needs for a pool of pool_bytes (generous: its metadata is ~31 B/frame). */
uint64_t machine_meta_bytes(uint64_t pool_bytes);
void *machine_arena(const struct machine *m);
void *machine_at(const struct machine *m, uint64_t off); /* NULL for 0 */
uint64_t machine_off(const struct machine *m, const void *p);

/* The mm lock (robust). EOWNERDEAD runs m->repair (none set: nothing to repair); a repair that
 * fails taints the machine. The lock stays usable either way. */
void machine_lock(struct machine *m);
void machine_unlock(struct machine *m);
bool machine_tainted(const struct machine *m);
/* Is the machine's host gone (dead, or destroyed the machine)? Never for the host itself. One
 * atomic load: safe anywhere, as often as wanted. */
bool machine_host_gone(const struct machine *m);

/* Take a slot for the calling process (pid, ppid, comm from /proc). Returns 1.., or -ENOSPC. */
int machine_slot_take(struct machine *m);
/* The same with the process's name given (its first 15 bytes): no /proc read. */
int machine_slot_take_named(struct machine *m, const char *name);
/* The process is leaving (exit, detach): the host releases the slot's frames. Stop the slot's
 * agent first. */
void machine_slot_leave(struct machine *m, int slot);
const struct machine_slot *machine_slot(const struct machine *m, int slot);
/* Publish this process's figures in its slot (mem: MACHINE_SLOT_MEM words, stored atomically
 * word by word: a reader may see a mix of two publications). */
void machine_slot_set_mem(struct machine *m, int slot, const uint64_t *mem);
/* The sum of the live slots' mem now into sum (MACHINE_SLOT_MEM words). */
void machine_mem_sum(const struct machine *m, uint64_t *sum);
/* Offer sum with its score: kept as the machine's peak if the score is the highest so far (an
 * offer made while another is being kept is dropped: the next one, or the host's, counts). */
void machine_mem_offer(struct machine *m, const uint64_t *sum, uint64_t score);
/* The peak kept; returns its score (0: none). */
uint64_t machine_mem_peak(const struct machine *m, uint64_t *peak);

/* Ask slot's agent to do req (op, owner, from, to); wait at most timeout_ns for the answer.
 * Returns the agent's result, -ENOENT (the process is gone; for slot 0: the host is gone, seen
 * within a slice), or -EBUSY (no answer in time: a stopped process; the request is withdrawn). */
int machine_request(struct machine *m, int slot, uint32_t op, uint64_t owner, uint32_t from,
		    uint32_t to, uint64_t timeout_ns);
/* A request that may take long once taken (a khugepaged visit: a collapse can wait seconds in
 * sync compaction): the agent must take it within take_timeout_ns (else -EBUSY, withdrawn), then
 * the answer is awaited for as long as the slot's process is there (-ENOENT when it is gone).
 * *reply gets the value the agent answered with (machine_serve_reply). */
int machine_request_long(struct machine *m, int slot, uint32_t op, uint64_t owner, uint32_t from,
			 uint32_t to, uint64_t take_timeout_ns, uint64_t *reply);
/* Agent side: wait for a request to `slot` (at most timeout_ns; 0 = forever). Returns true with
 * the request in *op, *owner, *from, *to, false on timeout, when *stop became nonzero or when the
 * slot is no longer LIVE. Every request taken is answered with machine_serve_done. */
bool machine_serve_wait(struct machine *m, int slot, const uint32_t *stop, uint64_t timeout_ns,
			uint32_t *op, uint64_t *owner, uint32_t *from, uint32_t *to);
void machine_serve_done(struct machine *m, int slot, int rc);
/* machine_serve_done with a value for the requester (machine_request_long's *reply). */
void machine_serve_reply(struct machine *m, int slot, int rc, uint64_t reply);
/* Wake a slot's agent blocked in machine_serve_wait (to see *stop). */
void machine_serve_kick(struct machine *m, int slot);

/* Host: look for processes that are gone (or said goodbye). For each, fail its pending request
 * with -ENOENT, call release(arg, slot) (the host frees its frames) and free the slot. Returns
 * the number reaped. Call periodically (the host's keeper thread). */
unsigned machine_reap(struct machine *m, void (*release)(void *arg, int slot), void *arg);
/* Slots 1.. in state LIVE (attached processes; the host is not counted). */
unsigned machine_nr_live(const struct machine *m);

/* The shmem object table (tab: a machine's hdr->shmem, or a process's own of as many entries),
 * with the caller holding its lock. get: the object of (dev, ino) (anon: a new one), slot now
 * mapping it: its id (1..MACHINE_SHMEM_OBJECTS) or -ENOSPC. map: slot maps id too (a fork
 * child). unmap: slot no longer maps id; true when the object must be released now (anon and
 * nobody maps it: state RELEASING, the caller frees its frames, then calls released). slot_gone:
 * a dead slot's mappings end; the ids to release go to ids[] (up to max), their count returned.
 */
int machine_shmem_get(struct machine_shmem *tab, uint64_t dev, uint64_t ino, bool anon, int slot);
void machine_shmem_map(struct machine_shmem *tab, uint32_t id, int slot);
/* The id of the live file object (dev, ino), 0 if there is none. */
int machine_shmem_find(const struct machine_shmem *tab, uint64_t dev, uint64_t ino);
bool machine_shmem_unmap(struct machine_shmem *tab, uint32_t id, int slot);
void machine_shmem_released(struct machine_shmem *tab, uint32_t id);
unsigned machine_shmem_slot_gone(struct machine_shmem *tab, int slot, uint32_t *ids, unsigned max);

/* Note that pid (comm) dirtied pages of file_id (path: for reports). Lock-free; a full table
 * forgets the newest files. */
void machine_file_note(struct machine *m, uint64_t file_id, int pid, const char *comm,
		       const char *path);
/* Who dirtied file_id last, if noted: fills *out. Lock-free. */
bool machine_file_who(const struct machine *m, uint64_t file_id, struct machine_file *out);

#endif
