/* Stack capture for stall attribution: the handler's own stack at the blocking point, the
 * faulting application thread's stack (via a real-time signal), and symbolisation at report time.
 *
 * The kernel equivalent is what watch-dstate.pl read from /proc/PID/stack for a task in D state
 * (save_stack_trace_tsk): here the "kernel" is the handler thread, so its stack is captured with
 * libunwind in-process, and the application's user stack is captured on the application thread
 * itself from the signal's ucontext.
 *
 * Safety rules (libunwind 1.6.2, Debian 12; see core/obs/README.md):
 *  - obs_unwind_init() runs once, outside the fault path: it sets the per-thread caching policy
 *    (unw_set_caching_policy is not signal-safe) and warms the unwinder up (its first call takes a
 *    mutex, libunwind#331).
 *  - libunwind's DWARF lookup calls dl_iterate_phdr (glibc's loader lock). An application thread
 *    holding that lock inside dlopen may be blocked on a fault only a handler thread can serve,
 *    so at most `max_in_libunwind` threads (the handler pool size - 1) unwind with libunwind at
 *    once; the others walk frame pointers (the project builds with -fno-omit-frame-pointer)
 *    inside the bounds obs_unwind_thread_init() recorded, and say so in obs_stack.method.
 *  - Application stacks are captured only for threads that faulted in user mode: a thread in a
 *    syscall (a kernel-mode fault) is never signalled, because a pending signal makes the
 *    kernel's fault retry loop spin and flood the userfaultfd (a non-fatal signal does not end a
 *    kernel-mode fault: arch/x86/mm/fault.c retries, fault_signal_pending() checking
 *    user_mode(regs), and handle_userfault() queues a new message each time); its syscall is
 *    recorded instead.
 *  - Symbolisation (obs_symbolise, elfutils' libdwfl) opens ELF files and allocates: report time
 *    only.
 */
#ifndef THPEMU_OBS_UNWIND_H
#define THPEMU_OBS_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#define OBS_STACK_MAX 32

enum obs_unwind_method {
	OBS_UNWIND_NONE,      /* nothing captured */
	OBS_UNWIND_LIBUNWIND, /* DWARF unwind by libunwind */
	OBS_UNWIND_FRAMEPTR,  /* frame-pointer walk (libunwind guard full, or libunwind failed) */
	OBS_UNWIND_MODELLED,  /* simulator: no IPs, frames named from the stall cause */
	OBS_UNWIND_PROC_PC,   /* application side fallback: the faulting instruction only, read
			       * from /proc/self/task/TID/syscall (signal not answered in time,
			       * or no capture handler installed) */
	OBS_UNWIND_NR,
};
const char *obs_unwind_method_name(enum obs_unwind_method m);

struct obs_stack {
	uint8_t nr;	     /* valid entries in ips[] */
	uint8_t method;	     /* enum obs_unwind_method */
	uint8_t exact_first; /* ips[0] is the faulting instruction (a signal frame), not a return
			      * address: symbolise it as is instead of ip - 1 */
	uintptr_t ips[OBS_STACK_MAX]; /* innermost first */
};

/* ---- Process-wide setup (not on the fault path) ----------------------------------------- */

/* Set libunwind's caching policy and warm it up. max_in_libunwind bounds how many threads may be
 * inside libunwind at once (pool size - 1; 0 = frame pointers only). Idempotent; a second call
 * only updates the bound. Returns 0 or -errno. */
int obs_unwind_init(unsigned max_in_libunwind);
void obs_unwind_set_limit(unsigned max_in_libunwind);

/* Record the calling thread's stack bounds for the frame-pointer walk and warm libunwind's
 * per-thread register-state cache (thread-local memory: cheap). lo/size: the thread's stack if
 * the caller allocated it; lo == NULL asks pthread_getattr_np (which may allocate: call it
 * before the thread serves faults). Returns 0 or -errno. A thread that never calls this gets no
 * frame-pointer fallback. */
int obs_unwind_thread_init(void *lo, size_t size);
/* Build the calling thread's unw_backtrace trace cache, after which its captures take ~0.2 us
 * instead of ~40 us (the cursor walk, same frames). The first call maps and writes 256 KiB and
 * takes libunwind's pool lock and the loader lock (within the guard's bound): call it outside
 * the fault path, only on threads that capture (each costs 64 page faults, so not at start-up).
 * Returns 1 when warm, 0 when the guard was full (try again later). */
int obs_unwind_thread_warm(void);
/* Around a call into libunwind made outside this module (a signal handler's unwind of the
 * interrupted context): false means do not unwind now (too many inside, or a fork). */
bool obs_unwind_enter(void);
void obs_unwind_exit(void);
/* pthread_atfork: no thread is inside libunwind while the address space is copied (its locks
 * are private memory: a child would inherit one held by a thread it does not have). */
void obs_unwind_fork_prepare(void);
void obs_unwind_fork_parent(void);
void obs_unwind_fork_child(void);

/* ---- Handler side (fault path safe) ------------------------------------------------------ */

/* Capture the calling thread's stack, skipping `skip` frames above the caller (0: the caller's
 * frame is ips[0]). Allocation-free, lock-free apart from what libunwind does (bounded by the
 * guard). Returns the number of frames. */
unsigned obs_stack_capture(struct obs_stack *st, unsigned skip);
/* The frame-pointer walk alone (for tests and the benchmark). */
unsigned obs_stack_capture_fp(struct obs_stack *st, unsigned skip);

/* ---- Application side ------------------------------------------------------------------- */

/* Where a thread was when asked (from /proc/self/task/TID/syscall). */
enum obs_task_state {
	OBS_TASK_GONE,	  /* the thread no longer exists */
	OBS_TASK_RUNNING, /* "running": on a CPU in user space */
	OBS_TASK_USER,	  /* "-1 ...": blocked outside a syscall, e.g. in a user-mode page fault */
	OBS_TASK_SYSCALL, /* "N ...": inside syscall N (a fault there is a kernel-mode fault) */
};
/* Classify thread tid of this process; *nr gets the syscall number for OBS_TASK_SYSCALL, *pc
 * (if not NULL) the user instruction pointer for OBS_TASK_USER (the faulting instruction of a
 * user-mode fault), else 0. Uses open/read/close only. Returns the state, or -errno for an
 * unreadable or unexpected file. */
int obs_task_state(pid_t tid, long *nr, uintptr_t *pc);
/* x86_64 syscall name, or NULL when not in the table. */
const char *obs_syscall_name(long nr);

/* Install the capture handler for signo (0: the default, SIGRTMIN + 7) with SA_SIGINFO |
 * SA_RESTART, chaining signals that are not capture requests to the previous disposition.
 * Returns the signal number used, or -errno (-EINVAL for a signal outside SIGRTMIN..SIGRTMAX). */
int obs_appstack_install(int signo);
/* Restore the previous disposition. */
void obs_appstack_uninstall(void);
/* The signal in use (0 while none is installed: it is installed at the first capture). */
int obs_appstack_signo(void);
/* The program's own sigaction on that signal: it sees and sets the disposition our handler
 * chains to, never ours. */
void obs_appstack_program_sigaction(const struct sigaction *act, struct sigaction *old);

enum obs_app_result {
	OBS_APP_NONE,	     /* not asked (or the simulator) */
	OBS_APP_USER,	     /* user-mode fault: stack captured on the application thread */
	OBS_APP_SYSCALL,     /* kernel-mode fault inside a syscall: syscall recorded, no signal */
	OBS_APP_TIMEOUT,     /* signalled but the thread did not answer in time */
	OBS_APP_UNAVAILABLE, /* thread gone, no handler or free slot, /proc unreadable */
	OBS_APP_NR,
};
const char *obs_app_result_name(enum obs_app_result r);

/* From a non-fault-path thread: capture thread tid's user stack while it is blocked in a fault.
 * Reads /proc first: a thread in a syscall is not signalled (*syscall_nr set instead); one in
 * user mode or running gets the signal and is waited for up to timeout_ns. Never blocks longer
 * than about twice timeout_ns. If the signal path gives nothing (no handler installed, no free
 * slot, no answer in time) for a thread blocked in user mode, the result is still OBS_APP_USER
 * with a one-frame stack of method OBS_UNWIND_PROC_PC. Returns the result kind. */
enum obs_app_result obs_appstack_capture(pid_t tid, struct obs_stack *st, long *syscall_nr,
					 uint64_t timeout_ns);

/* ---- Report time ------------------------------------------------------------------------ */

/* "function+0xOFF (object+0xADDR) dir/file.c:LINE" for ip (ip - 1 is looked up unless exact,
 * so a return address after a call at the end of a function names the caller; offsets are
 * printed for ip itself). ADDR is the address as the object's ELF file numbers it (addr2line -e
 * object ADDR); the source line is there when debug information has it. An address no symbol
 * covers prints "?? (object+0xADDR)", one in no object "0x<ip> (?)". Names come from libdwfl
 * (libdw.so.1, loaded at the first call): .symtab, .dynsym, and the build-id debug file under the
 * debuginfo path (/usr/lib/debug: Debian's -dbg packages). Allocates and opens files: never on
 * the fault path. Returns buf. */
const char *obs_symbolise(uintptr_t ip, bool exact, char *buf, size_t len);
/* Just the function name (without offset) of ip, for the per-event "function" column; "0x<ip>"
 * when unknown. */
const char *obs_symbolise_function(uintptr_t ip, bool exact, char *buf, size_t len);
/* Drop the symboliser's session (each object's symbol tables and debug information, kept from
 * the first lookup so that a report reads each file once, and the descriptors it holds). The
 * next lookup starts a new one. */
void obs_symbolise_end(void);
/* Where debug files are looked for by build ID ("DIR/.build-id/xx/yyyy.debug"; NULL: the
 * default, /usr/lib/debug). Ends the session. */
void obs_symbolise_debuginfo_path(const char *path);

/* Read /proc/self/task/TID/comm (raw open/read/close; fault path safe). Returns 0 or -errno. */
int obs_task_comm(pid_t tid, char comm[16]);

#endif
