/* Preloaded into the server run under valgrind 3.19 (bench/run --callgrind): valgrind's rt_sigsuspend wrapper writes
 * into the mask it is given, and libdispatch's main thread passes one in read-only memory, which kills valgrind
 * ("the 'impossible' happened", SIGSEGV). This sigsuspend hands the kernel a copy on the stack: the same call. */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, _NSIG / 8);
}
