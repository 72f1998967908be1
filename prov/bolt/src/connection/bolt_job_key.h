/*
 * bolt_job_key.h: the job key, which keeps independent jobs apart on the side
 * channel. Every process of a job sets the same FI_BOLT_JOB_KEY; the side
 * channel carries a 64-bit digest of it in every frame and drops peers whose
 * digest differs.
 *
 * The digest separates jobs that would otherwise meet by accident (a stale
 * address, a reused port, two users on one host). It is not authentication:
 * it travels in clear text, and anyone who can read the traffic, or who knows
 * the key, can present it.
 */
#ifndef BOLT_JOB_KEY_H
#define BOLT_JOB_KEY_H

#include <stdint.h>

/*
 * Digest of job_key; NULL or "" stands for the single-user default,
 * "uid:<real user id>", so that two users' jobs on one host do not meet.
 */
uint64_t bolt_job_key_digest(const char *job_key);

#endif /* BOLT_JOB_KEY_H */
