/*
 * bolt_random.h: random bytes from the operating system for PSNs, nonces and
 * job identities. Never rand(): it is predictable (unseeded, the same in every
 * process) and it moves the application's own rand() sequence.
 */
#ifndef BOLT_RANDOM_H
#define BOLT_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Fills bytes with length random bytes from the kernel; 0 or a negative error code. */
int bolt_random_bytes(void *bytes, size_t length);

/*
 * A random 32-bit value. The kernel's generator does not fail once the
 * system has booted; should it, the caller still gets a value that differs
 * between processes and calls (time and pid mixed), and a warning is logged.
 */
uint32_t bolt_random_u32(void);

#endif /* BOLT_RANDOM_H */
