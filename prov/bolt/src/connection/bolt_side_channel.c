/*
 * bolt_side_channel.c: the side channel's sockets, framing and validation:
 * listening and accepting, non-blocking connect, queued output that drains as
 * the socket takes it, input checked frame by frame before any of it is
 * handed up, and the handshake that proves the job key before any message.
 * The wire format and the handshake are described in bolt_side_channel.h.
 */
#define _GNU_SOURCE     /* accept4 */
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bolt.h"
#include "bolt_random.h"
#include "connection/bolt_side_channel.h"
#include "platform/bolt_platform.h"

#define BOLT_SIDE_CHANNEL_BACKLOG 128
#define BOLT_SIDE_CHANNEL_ADDRESS_TEXT 96
/* An address in the handshake's transcript: family, 16 bytes of address, port. */
#define BOLT_SIDE_CHANNEL_TRANSCRIPT_ADDRESS 19
#define BOLT_SIDE_CHANNEL_LABEL_SIZE 16
#define BOLT_SIDE_CHANNEL_TRANSCRIPT_SIZE (BOLT_SIDE_CHANNEL_LABEL_SIZE + \
	2 * BOLT_SIDE_CHANNEL_NONCE_SIZE + 2 * BOLT_SIDE_CHANNEL_TRANSCRIPT_ADDRESS)

/* Linux creates sockets non-blocking and close-on-exec atomically (no window
 * in which a concurrent fork + exec inherits them); elsewhere (macOS) the
 * flags are set right after creation, and SO_NOSIGPIPE does MSG_NOSIGNAL's job. */
#ifdef SOCK_CLOEXEC
#define BOLT_SIDE_CHANNEL_SOCKET_FLAGS (SOCK_NONBLOCK | SOCK_CLOEXEC)
#else
#define BOLT_SIDE_CHANNEL_SOCKET_FLAGS 0
#endif
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

struct bolt_side_channel_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
};

static void bolt_store_big_endian(uint8_t *bytes, uint64_t value, size_t size)
{
	for (size_t i = size; i > 0; i--, value >>= 8)
		bytes[i - 1] = (uint8_t) value;
}

static uint64_t bolt_load_big_endian(const uint8_t *bytes, size_t size)
{
	uint64_t value = 0;

	for (size_t i = 0; i < size; i++)
		value = value << 8 | bytes[i];
	return value;
}

static void bolt_side_channel_encode_header(const struct bolt_side_channel_header *header,
					    uint8_t *bytes)
{
	bolt_store_big_endian(bytes, header->magic, 4);
	bolt_store_big_endian(bytes + 4, header->version, 2);
	bolt_store_big_endian(bytes + 6, header->type, 2);
	bolt_store_big_endian(bytes + 8, header->length, 4);
}

static void bolt_side_channel_decode_header(const uint8_t *bytes,
					    struct bolt_side_channel_header *header)
{
	header->magic = (uint32_t) bolt_load_big_endian(bytes, 4);
	header->version = (uint16_t) bolt_load_big_endian(bytes + 4, 2);
	header->type = (uint16_t) bolt_load_big_endian(bytes + 6, 2);
	header->length = (uint32_t) bolt_load_big_endian(bytes + 8, 4);
}

/* "192.0.2.1:4000" or "[fe80::1%en0]:4000"; numeric only, so no name lookup can block. */
static void bolt_side_channel_format_address(const struct sockaddr *address, socklen_t length,
					     char *text, size_t size)
{
	char host[NI_MAXHOST], service[NI_MAXSERV];

	if (getnameinfo(address, length, host, sizeof(host), service, sizeof(service),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(text, size, "(unknown address)");
		return;
	}
	snprintf(text, size, address->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, service);
}

static int bolt_side_channel_check_address(const struct sockaddr *address, socklen_t length)
{
	socklen_t needed = 0;

	if (address && address->sa_family == AF_INET)
		needed = sizeof(struct sockaddr_in);
	else if (address && address->sa_family == AF_INET6)
		needed = sizeof(struct sockaddr_in6);
	if (needed && length >= needed && length <= sizeof(struct sockaddr_storage))
		return 0;
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
		"side channel: the address is not a whole IPv4 or IPv6 socket address\n");
	return -FI_EINVAL;
}

/*
 * The scope this host gives the IPv6 link-local address: the interface that
 * holds it (this host's own address, or a peer's on this host), else
 * via_scope, else the only interface that has a link-local address; 0 when
 * none of these tells.
 */
static uint32_t bolt_side_channel_link_scope(const struct in6_addr *address, uint32_t via_scope)
{
	struct ifaddrs *interfaces;
	uint32_t own = 0, only = 0;
	bool several = false;

	if (getifaddrs(&interfaces))
		return via_scope;
	for (const struct ifaddrs *entry = interfaces; entry; entry = entry->ifa_next) {
		const struct sockaddr_in6 *found = (const struct sockaddr_in6 *) entry->ifa_addr;

		if (!found || found->sin6_family != AF_INET6 || !(entry->ifa_flags & IFF_UP) ||
		    !IN6_IS_ADDR_LINKLOCAL(&found->sin6_addr) || !found->sin6_scope_id)
			continue;
		if (!own && IN6_ARE_ADDR_EQUAL(&found->sin6_addr, address))
			own = found->sin6_scope_id;
		several |= only && only != found->sin6_scope_id;
		only = found->sin6_scope_id;
	}
	freeifaddrs(interfaces);
	if (own)
		return own;
	return via_scope ? via_scope : several ? 0 : only;
}

/*
 * address, or for an IPv6 link-local address without a scope, a copy in
 * scoped with this host's scope (bolt_side_channel_link_scope). A bolt address
 * carries none: a link-local address names a link, and its scope is an
 * interface index that means nothing on another host. Checked before.
 */
static const struct sockaddr *bolt_side_channel_scoped(const struct sockaddr *address,
						       socklen_t length, uint32_t via_scope,
						       struct sockaddr_storage *scoped)
{
	const struct sockaddr_in6 *ipv6 = (const struct sockaddr_in6 *) address;

	if (address->sa_family != AF_INET6 || ipv6->sin6_scope_id ||
	    !IN6_IS_ADDR_LINKLOCAL(&ipv6->sin6_addr))
		return address;
	memcpy(scoped, address, length);
	((struct sockaddr_in6 *) scoped)->sin6_scope_id =
		bolt_side_channel_link_scope(&ipv6->sin6_addr, via_scope);
	return (const struct sockaddr *) scoped;
}

/* Completes what BOLT_SIDE_CHANNEL_SOCKET_FLAGS could not do at creation. */
static int bolt_side_channel_configure_socket(int fd)
{
#ifndef SOCK_CLOEXEC
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) || fcntl(fd, F_SETFD, FD_CLOEXEC))
		return -errno;
#endif
#ifdef SO_NOSIGPIPE
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof(one)))
		return -errno;
#endif
	(void) fd;      /* Linux did it all at creation */
	return 0;
}

/*
 * A new configured socket for address (checked first), or a negative error
 * code, logged as what the caller was about to do (purpose) with address.
 */
static int bolt_side_channel_socket(const struct sockaddr *address, socklen_t length,
				    const char *purpose)
{
	char text[BOLT_SIDE_CHANNEL_ADDRESS_TEXT];
	int ret = bolt_side_channel_check_address(address, length);
	int fd;

	if (ret)
		return ret;
	fd = socket(address->sa_family, SOCK_STREAM | BOLT_SIDE_CHANNEL_SOCKET_FLAGS, 0);
	ret = fd < 0 ? -errno : bolt_side_channel_configure_socket(fd);
	if (!ret)
		return fd;
	if (fd >= 0)
		close(fd);
	bolt_side_channel_format_address(address, length, text, sizeof(text));
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "side channel: cannot %s %s: socket: %s\n", purpose, text,
		strerror(-ret));
	return ret;
}

/* An accepted configured socket, or -errno. */
static int bolt_side_channel_accept_socket(int listen_fd, struct sockaddr_storage *peer,
					   socklen_t *peer_length)
{
	int fd, ret;

#ifdef SOCK_CLOEXEC
	fd = accept4(listen_fd, (struct sockaddr *) peer, peer_length,
		     BOLT_SIDE_CHANNEL_SOCKET_FLAGS);
#else
	fd = accept(listen_fd, (struct sockaddr *) peer, peer_length);
#endif
	if (fd < 0)
		return -errno;
	ret = bolt_side_channel_configure_socket(fd);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * Sets up a stream's socket: no delay, as messages are small and latency
 * matters more than packet count; and the kernel's watch for a peer host
 * gone silent, which runs whether or not the application calls progress
 * (a closed or reset socket shows a dead process at once). 0, or a negative
 * error code with what failed in *what.
 */
static int bolt_side_channel_tune(int fd, unsigned int liveness_ms, const char **what)
{
	int one = 1;

	*what = "TCP_NODELAY";
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -errno;
	*what = "TCP keepalive";
	return bolt_platform_socket_liveness(fd, liveness_ms);
}

static void bolt_side_channel_stream_init(struct bolt_side_channel_stream *stream, int fd,
					  const struct bolt_job_key *key, bool answerer,
					  const struct sockaddr *peer, socklen_t peer_length)
{
	stream->fd = fd;
	stream->connecting = false;
	stream->reached = true;
	stream->error = 0;
	stream->answerer = answerer;
	stream->authenticated = false;
	stream->proved = false;
	stream->key = *key;
	memset(stream->peer_nonce, 0, sizeof(stream->peer_nonce));
	stream->handshake_length = 0;
	/* The caller checks the generator once at the start; a failure here would be its own. */
	if (bolt_random_bytes(stream->own_nonce, sizeof(stream->own_nonce)))
		stream->error = -FI_EIO;
	memcpy(&stream->peer, peer, peer_length);
	stream->peer_length = peer_length;
	stream->out_length = 0;
	stream->in_length = 0;
	stream->in_checked = 0;
}

/*
 * Marks the connection dead, naming why (error is an errno value, or 0 when
 * what says it all). Info level: a peer going away is an event the connection
 * layer reports, not necessarily a fault.
 */
static int bolt_side_channel_fail(struct bolt_side_channel_stream *stream, int error,
				  const char *what)
{
	char peer[BOLT_SIDE_CHANNEL_ADDRESS_TEXT];

	bolt_side_channel_format_address((struct sockaddr *) &stream->peer, stream->peer_length,
					 peer, sizeof(peer));
	FI_INFO(&bolt_prov, FI_LOG_EP_CTRL, "side channel with %s: %s%s%s\n", peer, what,
		error ? ": " : "", error ? strerror(error) : "");
	stream->connecting = false;
	stream->error = -FI_ECONNRESET;
	return stream->error;
}

/* Marks the stream unusable after a malformed frame, naming what was wrong. */
__attribute__((format(printf, 2, 3)))
static int bolt_side_channel_reject(struct bolt_side_channel_stream *stream,
				    const char *format, ...)
{
	char peer[BOLT_SIDE_CHANNEL_ADDRESS_TEXT], reason[160];
	va_list arguments;

	va_start(arguments, format);
	vsnprintf(reason, sizeof(reason), format, arguments);
	va_end(arguments);
	bolt_side_channel_format_address((struct sockaddr *) &stream->peer, stream->peer_length,
					 peer, sizeof(peer));
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
		"side channel from %s: %s; the connection is dropped\n", peer, reason);
	stream->error = -FI_EPROTO;
	return stream->error;
}

static int bolt_side_channel_check_header(struct bolt_side_channel_stream *stream,
					  const struct bolt_side_channel_header *header)
{
	if (header->magic != BOLT_SIDE_CHANNEL_MAGIC)
		return bolt_side_channel_reject(stream,
			"bad magic 0x%08x, not a bolt side channel peer", header->magic);
	if (header->version != BOLT_SIDE_CHANNEL_VERSION)
		return bolt_side_channel_reject(stream,
			"protocol version %u, this process speaks version %u",
			header->version, BOLT_SIDE_CHANNEL_VERSION);
	if (header->type == 0)
		return bolt_side_channel_reject(stream, "message type 0");
	if (header->length > BOLT_SIDE_CHANNEL_MAX_BODY)
		return bolt_side_channel_reject(stream, "body of %u bytes, above the maximum %u",
			header->length, BOLT_SIDE_CHANNEL_MAX_BODY);
	return 0;
}

/* Checks the header of every frame that has arrived in whole or in part, once each. */
static int bolt_side_channel_check_input(struct bolt_side_channel_stream *stream)
{
	struct bolt_side_channel_header header;
	int ret;

	if (stream->error == -FI_EPROTO)
		return stream->error;
	while (stream->in_checked + BOLT_SIDE_CHANNEL_HEADER_SIZE <= stream->in_length) {
		bolt_side_channel_decode_header(stream->in_buffer + stream->in_checked, &header);
		ret = bolt_side_channel_check_header(stream, &header);
		if (ret)
			return ret;
		stream->in_checked += BOLT_SIDE_CHANNEL_HEADER_SIZE + header.length;
	}
	return 0;
}

static int bolt_side_channel_flush(struct bolt_side_channel_stream *stream);

/* Queues one handshake frame; it leaves before any message. */
static int bolt_side_channel_queue_handshake(struct bolt_side_channel_stream *stream, uint16_t type,
					     const void *body, uint32_t length)
{
	struct bolt_side_channel_header header = {
		.magic = BOLT_SIDE_CHANNEL_MAGIC,
		.version = BOLT_SIDE_CHANNEL_VERSION,
		.type = type,
		.length = length,
	};
	uint8_t *frame = stream->handshake_buffer + stream->handshake_length;

	if (BOLT_SIDE_CHANNEL_HEADER_SIZE + length >
	    sizeof(stream->handshake_buffer) - stream->handshake_length)
		return -FI_EOVERFLOW;   /* never: each end queues at most two small frames */
	bolt_side_channel_encode_header(&header, frame);
	memcpy(frame + BOLT_SIDE_CHANNEL_HEADER_SIZE, body, length);
	stream->handshake_length += BOLT_SIDE_CHANNEL_HEADER_SIZE + length;
	return 0;
}

/* address as the transcript holds it; zeros for one that is neither IPv4 nor IPv6. */
static void bolt_side_channel_transcript_address(const struct sockaddr_storage *address,
						 uint8_t *bytes)
{
	const struct sockaddr_in6 *ipv6 = (const struct sockaddr_in6 *) address;
	const struct sockaddr_in *ipv4 = (const struct sockaddr_in *) address;

	memset(bytes, 0, BOLT_SIDE_CHANNEL_TRANSCRIPT_ADDRESS);
	if (address->ss_family == AF_INET) {
		bytes[0] = 4;
		memcpy(bytes + 1, &ipv4->sin_addr, 4);
		memcpy(bytes + 17, &ipv4->sin_port, 2);
	} else if (address->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&ipv6->sin6_addr)) {
		bytes[0] = 4;
		memcpy(bytes + 1, ipv6->sin6_addr.s6_addr + 12, 4);
		memcpy(bytes + 17, &ipv6->sin6_port, 2);
	} else if (address->ss_family == AF_INET6) {
		bytes[0] = 6;
		memcpy(bytes + 1, &ipv6->sin6_addr, 16);
		memcpy(bytes + 17, &ipv6->sin6_port, 2);
	}
}

/*
 * What the MACs cover (bolt_side_channel.h): label ("clnt": the connecter's
 * proof, "srvr": the answerer's), both nonces and both addresses, in the
 * same order at both ends.
 */
static void bolt_side_channel_transcript(const struct bolt_side_channel_stream *stream,
					 const char *label, uint8_t *transcript)
{
	struct sockaddr_storage local = { 0 };
	socklen_t local_length = sizeof(local);
	const struct sockaddr_storage *connecter = stream->answerer ? &stream->peer : &local;
	const struct sockaddr_storage *answerer = stream->answerer ? &local : &stream->peer;
	uint8_t *at = transcript;

	if (stream->fd < 0 || getsockname(stream->fd, (struct sockaddr *) &local, &local_length))
		local.ss_family = AF_UNSPEC;
	memset(at, 0, BOLT_SIDE_CHANNEL_LABEL_SIZE);
	memcpy(at, label, strlen(label));
	at += BOLT_SIDE_CHANNEL_LABEL_SIZE;
	memcpy(at, stream->answerer ? stream->own_nonce : stream->peer_nonce,
	       BOLT_SIDE_CHANNEL_NONCE_SIZE);
	at += BOLT_SIDE_CHANNEL_NONCE_SIZE;
	memcpy(at, stream->answerer ? stream->peer_nonce : stream->own_nonce,
	       BOLT_SIDE_CHANNEL_NONCE_SIZE);
	at += BOLT_SIDE_CHANNEL_NONCE_SIZE;
	bolt_side_channel_transcript_address(connecter, at);
	bolt_side_channel_transcript_address(answerer, at + BOLT_SIDE_CHANNEL_TRANSCRIPT_ADDRESS);
}

#define BOLT_SIDE_CHANNEL_CONNECTER_LABEL "bolt-sc-v2-clnt"
#define BOLT_SIDE_CHANNEL_ANSWERER_LABEL "bolt-sc-v2-srvr"

/*
 * Every way of failing the handshake is this one refusal, with one message:
 * which check failed would tell a guesser what it got right.
 */
static int bolt_side_channel_refuse(struct bolt_side_channel_stream *stream)
{
	return bolt_side_channel_reject(stream,
		"the peer did not prove this job's key (every process of a job needs the same "
		"FI_BOLT_JOB_KEY or FI_BOLT_JOB_KEY_FILE, or, with neither, the same user)");
}

/*
 * Checks that frame is the expected handshake frame: of type, with a MAC of
 * the transcript under label at mac_offset of its body. Computed and compared
 * (in constant time) whatever the type and length, so that every refusal
 * costs the same.
 */
static bool bolt_side_channel_frame_proves(struct bolt_side_channel_stream *stream,
					   const struct bolt_side_channel_header *header,
					   const uint8_t *body, uint16_t type, uint32_t length,
					   const char *label)
{
	uint8_t transcript[BOLT_SIDE_CHANNEL_TRANSCRIPT_SIZE];
	uint8_t received[BOLT_SIDE_CHANNEL_PROOF_SIZE] = { 0 };
	uint32_t mac_offset = length - BOLT_JOB_KEY_MAC_SIZE;
	bool valid;

	memcpy(received, body, header->length < length ? header->length : length);
	if (stream->answerer)
		memcpy(stream->peer_nonce, received, BOLT_SIDE_CHANNEL_NONCE_SIZE);
	bolt_side_channel_transcript(stream, label, transcript);
	valid = bolt_job_key_verify(&stream->key, transcript, sizeof(transcript),
				    received + mac_offset);
	return valid & (header->type == type) & (header->length == length);
}

/* This end's MAC, under the job key, of the transcript with label. */
static void bolt_side_channel_sign(const struct bolt_side_channel_stream *stream, const char *label,
				   uint8_t *mac)
{
	uint8_t transcript[BOLT_SIDE_CHANNEL_TRANSCRIPT_SIZE];

	bolt_side_channel_transcript(stream, label, transcript);
	bolt_job_key_mac(&stream->key, transcript, sizeof(transcript), mac);
}

/* The connecter answers the challenge with its nonce and proof. */
static int bolt_side_channel_prove(struct bolt_side_channel_stream *stream,
				   const struct bolt_side_channel_header *header,
				   const uint8_t *body)
{
	uint8_t proof[BOLT_SIDE_CHANNEL_PROOF_SIZE];

	if (header->type != BOLT_SIDE_CHANNEL_CHALLENGE ||
	    header->length != BOLT_SIDE_CHANNEL_NONCE_SIZE)
		return bolt_side_channel_refuse(stream);
	memcpy(stream->peer_nonce, body, BOLT_SIDE_CHANNEL_NONCE_SIZE);
	memcpy(proof, stream->own_nonce, BOLT_SIDE_CHANNEL_NONCE_SIZE);
	bolt_side_channel_sign(stream, BOLT_SIDE_CHANNEL_CONNECTER_LABEL,
			       proof + BOLT_SIDE_CHANNEL_NONCE_SIZE);
	stream->proved = true;
	return bolt_side_channel_queue_handshake(stream, BOLT_SIDE_CHANNEL_PROOF, proof,
						 sizeof(proof));
}

/* The answerer checks the proof and confirms with its own. */
static int bolt_side_channel_check_proof(struct bolt_side_channel_stream *stream,
					 const struct bolt_side_channel_header *header,
					 const uint8_t *body)
{
	uint8_t confirm[BOLT_JOB_KEY_MAC_SIZE];

	if (!bolt_side_channel_frame_proves(stream, header, body, BOLT_SIDE_CHANNEL_PROOF,
					    BOLT_SIDE_CHANNEL_PROOF_SIZE,
					    BOLT_SIDE_CHANNEL_CONNECTER_LABEL))
		return bolt_side_channel_refuse(stream);
	bolt_side_channel_sign(stream, BOLT_SIDE_CHANNEL_ANSWERER_LABEL, confirm);
	stream->authenticated = true;
	return bolt_side_channel_queue_handshake(stream, BOLT_SIDE_CHANNEL_CONFIRM, confirm,
						 sizeof(confirm));
}

/* The connecter checks the answerer's confirmation. */
static int bolt_side_channel_check_confirm(struct bolt_side_channel_stream *stream,
					   const struct bolt_side_channel_header *header,
					   const uint8_t *body)
{
	if (!bolt_side_channel_frame_proves(stream, header, body, BOLT_SIDE_CHANNEL_CONFIRM,
					    BOLT_JOB_KEY_MAC_SIZE,
					    BOLT_SIDE_CHANNEL_ANSWERER_LABEL))
		return bolt_side_channel_refuse(stream);
	stream->authenticated = true;
	return 0;
}

/* Whether a whole checked frame is at the head of the input; decodes its header. */
static bool bolt_side_channel_head(const struct bolt_side_channel_stream *stream,
				   struct bolt_side_channel_header *header)
{
	/* in_checked > 0: the header at offset 0 has been checked. */
	if (!stream->in_checked)
		return false;
	bolt_side_channel_decode_header(stream->in_buffer, header);
	return stream->in_length >= BOLT_SIDE_CHANNEL_HEADER_SIZE + header->length;
}

static void bolt_side_channel_consume(struct bolt_side_channel_stream *stream,
				      const struct bolt_side_channel_header *header)
{
	uint32_t frame_length = BOLT_SIDE_CHANNEL_HEADER_SIZE + header->length;

	memmove(stream->in_buffer, stream->in_buffer + frame_length,
		stream->in_length - frame_length);
	stream->in_length -= frame_length;
	stream->in_checked -= frame_length;
}

/* Takes the handshake's frames as they come whole, until the peer is proven. */
static int bolt_side_channel_handshake(struct bolt_side_channel_stream *stream)
{
	struct bolt_side_channel_header header;
	const uint8_t *body = stream->in_buffer + BOLT_SIDE_CHANNEL_HEADER_SIZE;
	int ret = 0;

	while (!ret && !stream->authenticated && stream->error != -FI_EPROTO &&
	       bolt_side_channel_head(stream, &header)) {
		if (stream->answerer)
			ret = bolt_side_channel_check_proof(stream, &header, body);
		else if (!stream->proved)
			ret = bolt_side_channel_prove(stream, &header, body);
		else
			ret = bolt_side_channel_check_confirm(stream, &header, body);
		if (!ret)
			bolt_side_channel_consume(stream, &header);
	}
	return ret;
}

/* Whether a connect() error comes from the network or the peer, not from this host. */
static bool bolt_side_channel_is_peer_error(int error)
{
	switch (error) {
	case ECONNREFUSED: case ECONNRESET: case ETIMEDOUT:
	case ENETUNREACH: case EHOSTUNREACH: case ENETDOWN: case EHOSTDOWN:
		return true;
	default:
		return false;
	}
}

/* Whether accept() failed for one connection only, so the listener carries on (accept(2)). */
static bool bolt_side_channel_is_transient_accept_error(int error)
{
	switch (error) {
	case EAGAIN: case EINTR: case ECONNABORTED:
#if EWOULDBLOCK != EAGAIN
	case EWOULDBLOCK:
#endif
	case ENETDOWN: case EPROTO: case ENOPROTOOPT: case EHOSTDOWN: case EHOSTUNREACH:
	case EOPNOTSUPP: case ENETUNREACH:
#ifdef ENONET
	case ENONET:
#endif
		return true;
	default:
		return false;
	}
}

int bolt_side_channel_listen(const struct sockaddr *address, socklen_t length,
			     const struct bolt_job_key *key, unsigned int liveness_ms,
			     struct bolt_side_channel_listener *listener)
{
	char text[BOLT_SIDE_CHANNEL_ADDRESS_TEXT];
	struct sockaddr_storage scoped;
	const char *what;
	int one = 1, fd, ret;

	listener->fd = -1;
	fd = bolt_side_channel_socket(address, length, "listen on");
	if (fd < 0)
		return fd;
	address = bolt_side_channel_scoped(address, length, 0, &scoped);
	/* Lets a restarted job bind the fixed port its predecessor's connections hold in TIME_WAIT. */
	what = "SO_REUSEADDR";
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		goto fail_errno;
	what = "bind";
	if (bind(fd, address, length))
		goto fail_errno;
	what = "listen";
	if (listen(fd, BOLT_SIDE_CHANNEL_BACKLOG))
		goto fail_errno;
	what = "getsockname";
	listener->address_length = sizeof(listener->address);
	if (getsockname(fd, (struct sockaddr *) &listener->address, &listener->address_length))
		goto fail_errno;

	listener->fd = fd;
	listener->key = *key;
	listener->liveness_ms = liveness_ms;
	bolt_side_channel_format_address((struct sockaddr *) &listener->address,
					 listener->address_length, text, sizeof(text));
	FI_INFO(&bolt_prov, FI_LOG_EP_CTRL, "side channel: listening on %s\n", text);
	return 0;

fail_errno:
	ret = -errno;
	close(fd);
	bolt_side_channel_format_address(address, length, text, sizeof(text));
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "side channel: cannot listen on %s: %s: %s\n",
		text, what, strerror(-ret));
	return ret;
}

uint32_t bolt_side_channel_listener_scope(const struct bolt_side_channel_listener *listener)
{
	const struct sockaddr_in6 *ipv6 = (const struct sockaddr_in6 *) &listener->address;

	return listener->fd >= 0 && ipv6->sin6_family == AF_INET6 ? ipv6->sin6_scope_id : 0;
}

void bolt_side_channel_listener_close(struct bolt_side_channel_listener *listener)
{
	if (listener->fd >= 0)
		close(listener->fd);
	listener->fd = -1;
	bolt_job_key_clear(&listener->key);
}

int bolt_side_channel_accept(struct bolt_side_channel_listener *listener,
			     struct bolt_side_channel_stream *stream)
{
	struct sockaddr_storage peer;
	socklen_t peer_length = sizeof(peer);
	const char *what;
	int fd, ret;

	stream->fd = -1;
	fd = bolt_side_channel_accept_socket(listener->fd, &peer, &peer_length);
	if (fd < 0) {
		if (bolt_side_channel_is_transient_accept_error(-fd))
			return -FI_EAGAIN;
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "side channel: accept: %s\n", strerror(-fd));
		return fd;
	}
	ret = bolt_side_channel_tune(fd, listener->liveness_ms, &what);
	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "side channel: accepted: %s: %s\n", what,
			strerror(-ret));
		close(fd);
		return ret;
	}
	bolt_side_channel_stream_init(stream, fd, &listener->key, true,
				      (struct sockaddr *) &peer, peer_length);
	ret = bolt_side_channel_queue_handshake(stream, BOLT_SIDE_CHANNEL_CHALLENGE,
						stream->own_nonce, sizeof(stream->own_nonce));
	/* A failure shows at the stream's first progress, where every other one does. */
	if (!ret)
		(void) bolt_side_channel_flush(stream);
	return 0;
}

int bolt_side_channel_connect(const struct sockaddr *address, socklen_t length, uint32_t via_scope,
			      const struct bolt_job_key *key, unsigned int liveness_ms,
			      struct bolt_side_channel_stream *stream)
{
	char text[BOLT_SIDE_CHANNEL_ADDRESS_TEXT];
	struct sockaddr_storage scoped;
	const char *what;
	int fd, ret;

	stream->fd = -1;
	fd = bolt_side_channel_socket(address, length, "connect to");
	if (fd < 0)
		return fd;
	address = bolt_side_channel_scoped(address, length, via_scope, &scoped);
	ret = bolt_side_channel_tune(fd, liveness_ms, &what);
	if (ret)
		goto fail_close;

	bolt_side_channel_stream_init(stream, fd, key, false, address, length);
	if (!connect(fd, address, length))
		return 0;
	/* A non-blocking connect that was interrupted carries on like one in progress. */
	if (errno == EINPROGRESS || errno == EINTR) {
		stream->connecting = true;
		stream->reached = false;
		return 0;
	}
	/* Loopback may refuse at once; report it where every other refusal shows. */
	if (bolt_side_channel_is_peer_error(errno)) {
		stream->reached = false;
		bolt_side_channel_fail(stream, errno, "connect");
		return 0;
	}
	what = "connect";
	ret = -errno;
fail_close:
	close(fd);
	stream->fd = -1;
	bolt_side_channel_format_address(address, length, text, sizeof(text));
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "side channel: cannot connect to %s: %s: %s\n",
		text, what, strerror(-ret));
	return ret;
}

/* A non-blocking connect has ended when the socket turns writable; SO_ERROR says how. */
static int bolt_side_channel_finish_connect(struct bolt_side_channel_stream *stream)
{
	struct pollfd pollfd = { .fd = stream->fd, .events = POLLOUT };
	socklen_t length = sizeof(int);
	int error = 0;

	/* Zero timeout: only asks. -1 (EINTR, ENOMEM) is asked again at the next progress. */
	if (poll(&pollfd, 1, 0) <= 0)
		return 0;
	if (getsockopt(stream->fd, SOL_SOCKET, SO_ERROR, &error, &length))
		error = errno;
	if (error)
		return bolt_side_channel_fail(stream, error, "connect");
	stream->connecting = false;
	stream->reached = true;
	return 0;
}

/* Writes what the socket takes of the *length bytes at buffer, and drops them from it. */
static int bolt_side_channel_write(struct bolt_side_channel_stream *stream, uint8_t *buffer,
				   uint32_t *length)
{
	uint32_t sent = 0;
	ssize_t written;
	int ret = 0;

	while (!ret && sent < *length) {
		written = send(stream->fd, buffer + sent, *length - sent, MSG_NOSIGNAL);
		if (written > 0)
			sent += (uint32_t) written;
		else if (written == 0 || errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		else if (errno != EINTR)
			ret = bolt_side_channel_fail(stream, errno, "send");
	}
	memmove(buffer, buffer + sent, *length - sent);
	*length -= sent;
	return ret;
}

/*
 * Writes queued output until the socket is full: the handshake's first;
 * messages only once the peer is proven; nothing while connecting.
 */
static int bolt_side_channel_flush(struct bolt_side_channel_stream *stream)
{
	int ret;

	if (stream->connecting) {
		ret = bolt_side_channel_finish_connect(stream);
		if (ret || stream->connecting)
			return ret;
	}
	ret = bolt_side_channel_write(stream, stream->handshake_buffer, &stream->handshake_length);
	if (ret || stream->handshake_length || !stream->authenticated)
		return ret;
	return bolt_side_channel_write(stream, stream->out_buffer, &stream->out_length);
}

/*
 * Reads until the socket is empty or the input buffer full (receive makes
 * room; the socket stays readable for poll meanwhile), then checks what came.
 */
static int bolt_side_channel_read(struct bolt_side_channel_stream *stream)
{
	ssize_t received;
	int ret = 0, check;

	while (!ret && stream->in_length < sizeof(stream->in_buffer)) {
		received = recv(stream->fd, stream->in_buffer + stream->in_length,
				sizeof(stream->in_buffer) - stream->in_length, 0);
		if (received > 0)
			stream->in_length += (uint32_t) received;
		else if (received == 0)
			ret = bolt_side_channel_fail(stream, 0, "the peer closed the connection");
		else if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		else if (errno != EINTR)
			ret = bolt_side_channel_fail(stream, errno, "recv");
	}
	/* A malformed frame says more about the peer than the close that followed it. */
	check = bolt_side_channel_check_input(stream);
	if (!check)
		check = bolt_side_channel_handshake(stream);
	/* The handshake's answer leaves at once. */
	if (!check && !ret && stream->handshake_length)
		ret = bolt_side_channel_flush(stream);
	return check ? check : ret;
}

int bolt_side_channel_progress(struct bolt_side_channel_stream *stream)
{
	int ret;

	if (stream->error)
		return stream->error;
	ret = bolt_side_channel_flush(stream);
	if (ret || stream->connecting)
		return ret;
	return bolt_side_channel_read(stream);
}

int bolt_side_channel_send(struct bolt_side_channel_stream *stream, uint16_t type,
			   const void *body, uint32_t length)
{
	struct bolt_side_channel_header header = {
		.magic = BOLT_SIDE_CHANNEL_MAGIC,
		.version = BOLT_SIDE_CHANNEL_VERSION,
		.type = type,
		.length = length,
	};
	uint32_t frame_length;
	uint8_t *frame;
	int ret;

	if (type == 0 || type >= BOLT_SIDE_CHANNEL_RESERVED_TYPE ||
	    length > BOLT_SIDE_CHANNEL_MAX_BODY || (length && !body))
		return -FI_EINVAL;
	if (stream->error)
		return stream->error;
	frame_length = BOLT_SIDE_CHANNEL_HEADER_SIZE + length;
	if (frame_length > sizeof(stream->out_buffer) - stream->out_length) {
		ret = bolt_side_channel_flush(stream);
		if (ret)
			return ret;
		if (frame_length > sizeof(stream->out_buffer) - stream->out_length)
			return -FI_EAGAIN;
	}
	frame = stream->out_buffer + stream->out_length;
	bolt_side_channel_encode_header(&header, frame);
	if (length)
		memcpy(frame + BOLT_SIDE_CHANNEL_HEADER_SIZE, body, length);
	stream->out_length += frame_length;
	return bolt_side_channel_flush(stream);
}

int bolt_side_channel_receive(struct bolt_side_channel_stream *stream, uint16_t *type,
			      void *body, uint32_t capacity, uint32_t *length)
{
	struct bolt_side_channel_header header;

	if (!stream->authenticated || !bolt_side_channel_head(stream, &header))
		return stream->error ? stream->error : -FI_EAGAIN;
	if (header.type >= BOLT_SIDE_CHANNEL_RESERVED_TYPE)
		return bolt_side_channel_reject(stream, "a handshake frame after the handshake");
	*length = header.length;
	if (header.length > capacity)
		return -FI_ETOOSMALL;
	*type = header.type;
	if (header.length)
		memcpy(body, stream->in_buffer + BOLT_SIDE_CHANNEL_HEADER_SIZE, header.length);
	bolt_side_channel_consume(stream, &header);
	return 0;
}

void bolt_side_channel_stream_close(struct bolt_side_channel_stream *stream)
{
	if (stream->fd >= 0)
		close(stream->fd);
	stream->fd = -1;
	stream->connecting = false;
	stream->out_length = 0;
	stream->handshake_length = 0;
	stream->in_length = 0;
	stream->in_checked = 0;
	bolt_job_key_clear(&stream->key);
}

int bolt_side_channel_fd(const struct bolt_side_channel_stream *stream)
{
	return stream->fd;
}

short bolt_side_channel_poll_events(const struct bolt_side_channel_stream *stream)
{
	bool output = stream->handshake_length || (stream->authenticated && stream->out_length);

	return (short) (POLLIN | (stream->connecting || output ? POLLOUT : 0));
}

void bolt_side_channel_stream_detached(struct bolt_side_channel_stream *stream,
				       const struct bolt_job_key *key, bool authenticated)
{
	struct sockaddr_storage nowhere = { .ss_family = AF_UNSPEC };

	bolt_side_channel_stream_init(stream, -1, key, true, (struct sockaddr *) &nowhere,
				      sizeof(nowhere));
	stream->authenticated = authenticated;
}

int bolt_side_channel_feed(struct bolt_side_channel_stream *stream, const void *bytes,
			   uint32_t length, uint32_t *taken)
{
	uint32_t room = (uint32_t) sizeof(stream->in_buffer) - stream->in_length;
	int ret;

	*taken = length < room ? length : room;
	memcpy(stream->in_buffer + stream->in_length, bytes, *taken);
	stream->in_length += *taken;
	ret = bolt_side_channel_check_input(stream);
	return ret ? ret : bolt_side_channel_handshake(stream);
}
