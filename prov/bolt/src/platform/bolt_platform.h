/*
 * bolt_platform.h: what bolt needs from the operating system beyond POSIX.
 * Each platform implements these in its own folder (linux/; a macOS port
 * adds darwin/), so that a port touches one folder. The software RDMA
 * device (softrdma/) is Linux's only and keeps its own system calls.
 */
#ifndef BOLT_PLATFORM_H
#define BOLT_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Makes the kernel watch a connected TCP socket for a peer that vanished
 * without closing it (power lost, cable pulled, host stopped): probes while
 * the socket is idle, and, once nothing has come from the peer for
 * liveness_ms (idle, or sent data unacknowledged), the socket fails with
 * ETIMEDOUT. The kernel answers the probes, so a peer whose process is
 * paused (a debugger, a starved CPU) stays alive. Probes go every second
 * of idleness, so a host that stops for less than liveness_ms minus one
 * second stays alive, and one gone is found within liveness_ms plus one
 * second. 0 or a negative errno.
 */
int bolt_platform_socket_liveness(int fd, unsigned int liveness_ms);

/*
 * CPUs this process may run on, at least 1: its affinity mask, which taskset
 * and mpirun's binding narrow, where the system has one; else those online.
 */
int bolt_platform_usable_cpus(void);

/*
 * Nanoseconds of a monotonic clock to within a few milliseconds (Linux: one
 * timer tick), read in a few nanoseconds: for deciding, on every progress
 * call, whether a periodic check is due. Not comparable with
 * CLOCK_MONOTONIC's readings.
 */
uint64_t bolt_platform_coarse_now_ns(void);

/* The page size bolt_platform_huge_allocate aligns to. */
#define BOLT_PLATFORM_HUGE_PAGE ((size_t) 2 << 20)

/*
 * bytes zeroed, in whole huge pages (the last one partly unused), on huge
 * pages where the system has them; NULL if out of memory; free() frees it.
 * For a buffer a device writes into again and again: a device walks it
 * page by page (the software device's process_vm_writev ran at about half
 * of memcpy's speed on 4 KiB pages), and a real one's translation entries
 * cover it with fewer pages.
 */
void *bolt_platform_huge_allocate(size_t bytes);

/* Fills bytes with length bytes of the kernel's random generator; 0 or a negative errno. */
int bolt_platform_random_bytes(void *bytes, size_t length);

#endif /* BOLT_PLATFORM_H */
