/*
 * bolt_job_key.c: the job key: where it comes from (the parameter, a key
 * file or the per-user default), its hash, and the MAC the side channel's
 * handshake proves it with. Every primitive is libsodium's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "bolt.h"
#include "connection/bolt_job_key.h"

/* Keeps this hash apart from any other use of the same key material. */
#define BOLT_JOB_KEY_CONTEXT "bolt side channel job key v2"

_Static_assert(sizeof(((struct bolt_job_key *) 0)->mac_key) == crypto_auth_hmacsha256_KEYBYTES,
	       "the MAC key is HMAC-SHA-256's");
_Static_assert(BOLT_JOB_KEY_MAC_SIZE == crypto_auth_hmacsha256_BYTES, "a whole HMAC-SHA-256");

static void bolt_job_key_derive(const void *material, size_t length, bool secret,
				struct bolt_job_key *key)
{
	crypto_generichash_state state;

	crypto_generichash_init(&state, NULL, 0, sizeof(key->mac_key));
	crypto_generichash_update(&state, (const unsigned char *) BOLT_JOB_KEY_CONTEXT,
				  sizeof(BOLT_JOB_KEY_CONTEXT));
	crypto_generichash_update(&state, material, length);
	crypto_generichash_final(&state, key->mac_key, sizeof(key->mac_key));
	key->secret = secret;
}

/* A key file must be this user's own and unreadable by others, like an ssh key. */
static int bolt_job_key_check_file(int fd, const char *path)
{
	struct stat status;

	if (fstat(fd, &status))
		return -errno;
	if (!S_ISREG(status.st_mode) || status.st_uid != geteuid() ||
	    (status.st_mode & (S_IRWXG | S_IRWXO))) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"job key file %s: refused: it must be a regular file of this user, mode 0600 "
			"or 0400\n", path);
		return -FI_EACCES;
	}
	return 0;
}

static int bolt_job_key_read_file(const char *path, struct bolt_job_key *key)
{
	uint8_t material[BOLT_JOB_KEY_FILE_MAX + 1];
	ssize_t length;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		ret = -errno;
		FI_WARN(&bolt_prov, FI_LOG_CORE, "job key file %s: %s\n", path, strerror(errno));
		return ret;
	}
	ret = bolt_job_key_check_file(fd, path);
	length = ret ? 0 : read(fd, material, sizeof(material));
	if (!ret && length < 0)
		ret = -errno;
	close(fd);
	while (length > 0 && isspace(material[length - 1]))
		length--;
	if (!ret && (length == 0 || length > BOLT_JOB_KEY_FILE_MAX)) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "job key file %s: empty, or above %d bytes\n", path,
			BOLT_JOB_KEY_FILE_MAX);
		ret = -FI_EINVAL;
	}
	if (!ret)
		bolt_job_key_derive(material, (size_t) length, true, key);
	sodium_memzero(material, sizeof(material));
	return ret;
}

static void bolt_job_key_default(struct bolt_job_key *key)
{
	static atomic_bool warned;
	char identity[32];

	if (!atomic_exchange(&warned, true))
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"no FI_BOLT_JOB_KEY or FI_BOLT_JOB_KEY_FILE: the side channel is not "
			"authenticated (only this user's id keeps jobs apart); give every process "
			"of a job the same random key to authenticate it\n");
	snprintf(identity, sizeof(identity), "uid:%lu", (unsigned long) getuid());
	bolt_job_key_derive(identity, strlen(identity), false, key);
}

int bolt_job_key_load(const char *job_key, const char *key_file, struct bolt_job_key *key)
{
	bool has_key = job_key && job_key[0], has_file = key_file && key_file[0];

	memset(key, 0, sizeof(*key));
	if (sodium_init() < 0) {
		FI_WARN(&bolt_prov, FI_LOG_CORE, "libsodium could not initialise\n");
		return -FI_ENOSYS;
	}
	if (has_key && has_file) {
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"FI_BOLT_JOB_KEY and FI_BOLT_JOB_KEY_FILE are both set: give one\n");
		return -FI_EINVAL;
	}
	if (has_file)
		return bolt_job_key_read_file(key_file, key);
	if (has_key)
		bolt_job_key_derive(job_key, strlen(job_key), true, key);
	else
		bolt_job_key_default(key);
	return 0;
}

void bolt_job_key_mac(const struct bolt_job_key *key, const void *message, size_t length,
		      uint8_t mac[BOLT_JOB_KEY_MAC_SIZE])
{
	crypto_auth_hmacsha256(mac, message, length, key->mac_key);
}

bool bolt_job_key_verify(const struct bolt_job_key *key, const void *message, size_t length,
			 const uint8_t mac[BOLT_JOB_KEY_MAC_SIZE])
{
	return crypto_auth_hmacsha256_verify(mac, message, length, key->mac_key) == 0;
}

void bolt_job_key_clear(struct bolt_job_key *key)
{
	sodium_memzero(key, sizeof(*key));
}
