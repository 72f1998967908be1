/*
 * bolt_job_key.h: the job key, which the two ends of every side channel
 * prove they hold (bolt_side_channel.h: a keyed MAC over nonces of both
 * sides; the key never travels).
 *
 * The key is FI_BOLT_JOB_KEY, or the contents of FI_BOLT_JOB_KEY_FILE for a
 * key that must not sit in the environment. A launcher passes a random one
 * (for example 32 random bytes in hex) to every process of a job: then a peer
 * that does not hold it is refused, and two jobs never meet. Without one, the
 * identity is the per-user default "uid:<real user id>": it keeps two users'
 * jobs apart, but anyone can compute it, so the side channel is then not
 * authenticated (as libfabric's tcp provider and NCCL's bootstrap are not).
 */
#ifndef BOLT_JOB_KEY_H
#define BOLT_JOB_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BOLT_JOB_KEY_MAC_SIZE 32
#define BOLT_JOB_KEY_FILE_MAX 4096

struct bolt_job_key {
	uint8_t mac_key[32];    /* a hash of the key; the key itself is not kept */
	bool secret;            /* from FI_BOLT_JOB_KEY or a key file, not the default */
};

/*
 * Makes key from job_key, or from the file named key_file (owned by this
 * user, not readable by others; trailing white space is not part of it), or,
 * both NULL or "", from the per-user default, warning once per process that
 * the side channel is not authenticated. Both set is an error. 0 or a
 * negative error code, logged.
 */
int bolt_job_key_load(const char *job_key, const char *key_file, struct bolt_job_key *key);

/* HMAC-SHA-256 of message under key. */
void bolt_job_key_mac(const struct bolt_job_key *key, const void *message, size_t length,
		      uint8_t mac[BOLT_JOB_KEY_MAC_SIZE]);

/* Whether mac is message's; in constant time, whatever differs. */
bool bolt_job_key_verify(const struct bolt_job_key *key, const void *message, size_t length,
			 const uint8_t mac[BOLT_JOB_KEY_MAC_SIZE]);

/* Forgets the key (zeroed so that no copy lingers in freed memory). */
void bolt_job_key_clear(struct bolt_job_key *key);

#endif /* BOLT_JOB_KEY_H */
