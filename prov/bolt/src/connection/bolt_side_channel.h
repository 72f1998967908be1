/*
 * bolt_side_channel.h: the transport of the connection manager's side
 * channel: non-blocking TCP streams that carry framed, validated messages
 * between the processes of one job. The connection layer defines the message
 * types and what they carry (queue pair numbers, PSNs, GIDs, liveness); this
 * module moves them and refuses anything that is not a well-formed frame of
 * this job. A closed or reset connection is how a dead peer shows itself.
 *
 * A frame on the wire, every field in network byte order:
 *   offset  0  uint32  magic, BOLT_SIDE_CHANNEL_MAGIC ("BOLT")
 *   offset  4  uint16  protocol version, BOLT_SIDE_CHANNEL_VERSION
 *   offset  6  uint16  message type; opaque here, except that 0 is invalid and
 *                      types from BOLT_SIDE_CHANNEL_RESERVED_TYPE on are the handshake's
 *   offset  8  uint32  body length, at most BOLT_SIDE_CHANNEL_MAX_BODY
 *   offset 12          body
 *
 * Before any message, the two ends prove they hold the job key
 * (connection/bolt_job_key.h) without sending it: three frames, each nonce 32
 * random bytes, each MAC an HMAC-SHA-256 under the job key:
 *   1. CHALLENGE  answerer -> connecter, at accept: body the answerer's nonce (32 bytes)
 *   2. PROOF      connecter -> answerer: body the connecter's nonce (32), then
 *                 MAC("bolt-sc-v2-clnt\0" transcript) (32)
 *   3. CONFIRM    answerer -> connecter: body MAC("bolt-sc-v2-srvr\0" transcript) (32)
 * where transcript = answerer's nonce, connecter's nonce, the connecter's
 * address, the answerer's address; an address is 19 bytes: 4 or 6 (IPv4,
 * IPv6; an IPv4-mapped IPv6 address counts as IPv4), 16 bytes of address
 * (IPv4 in the first 4, zeros after) and the port (2 bytes). The labels set
 * the direction, so that no MAC can be reflected; fresh nonces, so that no
 * captured frame can be replayed on another connection; the addresses, so
 * that no one can relay a handshake between two other connections.
 * The answerer delivers nothing before a valid PROOF, the connecter sends
 * nothing of its own before a valid CONFIRM. Any other frame first, a wrong
 * MAC or a wrong length is the same refusal: the stream fails with
 * -FI_EPROTO when the whole frame has arrived, never before, after the same
 * checks (the MAC compared in constant time).
 *
 * Nothing here blocks and nothing allocates per message: each stream holds
 * fixed-size buffers. Not thread-safe: callers serialise the use of a stream.
 */
#ifndef BOLT_SIDE_CHANNEL_H
#define BOLT_SIDE_CHANNEL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bolt.h"
#include "connection/bolt_job_key.h"

#define BOLT_SIDE_CHANNEL_MAGIC 0x424f4c54u
#define BOLT_SIDE_CHANNEL_VERSION 2
#define BOLT_SIDE_CHANNEL_HEADER_SIZE 12
#define BOLT_SIDE_CHANNEL_RESERVED_TYPE 0xff00
#define BOLT_SIDE_CHANNEL_CHALLENGE 0xff01
#define BOLT_SIDE_CHANNEL_PROOF 0xff02
#define BOLT_SIDE_CHANNEL_CONFIRM 0xff03
#define BOLT_SIDE_CHANNEL_NONCE_SIZE 32
#define BOLT_SIDE_CHANNEL_PROOF_SIZE (BOLT_SIDE_CHANNEL_NONCE_SIZE + BOLT_JOB_KEY_MAC_SIZE)
/* Messages are small (connection setup, liveness); a bound keeps buffers fixed. */
#define BOLT_SIDE_CHANNEL_MAX_BODY 4096
#define BOLT_SIDE_CHANNEL_MAX_FRAME (BOLT_SIDE_CHANNEL_HEADER_SIZE + BOLT_SIDE_CHANNEL_MAX_BODY)
/* Room for a maximum message while the previous one is still draining. */
#define BOLT_SIDE_CHANNEL_OUT_CAPACITY (2 * BOLT_SIDE_CHANNEL_MAX_FRAME)

struct bolt_side_channel_listener {
	int fd;                             /* -1 when closed */
	struct bolt_job_key key;            /* given to every accepted stream */
	unsigned int liveness_ms;           /* every accepted stream's silence limit */
	struct sockaddr_storage address;    /* as bound: port 0 replaced by the real one */
	socklen_t address_length;
};

struct bolt_side_channel_stream {
	int fd;                             /* -1 when closed */
	bool connecting;                    /* a non-blocking connect not yet complete */
	bool reached;                       /* the peer's listener took the connection */
	int error;                          /* once set, 0 -> -FI_ECONNRESET or -FI_EPROTO */
	bool answerer;                      /* accepted, not connected: sends the challenge */
	bool authenticated;                 /* the peer proved the key: messages flow */
	bool proved;                        /* connecter: its proof is queued */
	struct bolt_job_key key;
	uint8_t own_nonce[BOLT_SIDE_CHANNEL_NONCE_SIZE];
	uint8_t peer_nonce[BOLT_SIDE_CHANNEL_NONCE_SIZE];
	uint32_t handshake_length;          /* handshake bytes queued in handshake_buffer */
	struct sockaddr_storage peer;       /* for log messages */
	socklen_t peer_length;
	uint32_t out_length;                /* bytes queued at the start of out_buffer */
	uint32_t in_length;                 /* bytes received at the start of in_buffer */
	uint32_t in_checked;                /* offset of the first frame whose header is unchecked */
	/* The handshake's frames leave first; messages wait until the peer is proven. */
	uint8_t handshake_buffer[BOLT_SIDE_CHANNEL_HEADER_SIZE + BOLT_SIDE_CHANNEL_PROOF_SIZE];
	uint8_t out_buffer[BOLT_SIDE_CHANNEL_OUT_CAPACITY];
	/* One maximum frame: a checked frame at offset 0 always fits whole. */
	uint8_t in_buffer[BOLT_SIDE_CHANNEL_MAX_FRAME];
};

/*
 * Binds address (IPv4 or IPv6; port 0 picks an ephemeral port, reported in
 * listener->address) and listens, non-blocking and close-on-exec. An IPv6
 * link-local address without a scope takes the one of the interface that
 * holds it. Accepted streams require key (copied) and fail when the peer's
 * host stays silent for liveness_ms (bolt_platform_socket_liveness). 0 or a
 * negative error code.
 */
int bolt_side_channel_listen(const struct sockaddr *address, socklen_t length,
			     const struct bolt_job_key *key, unsigned int liveness_ms,
			     struct bolt_side_channel_listener *listener);
/* The interface of a listener on an IPv6 link-local address (its scope id); 0 for others. */
uint32_t bolt_side_channel_listener_scope(const struct bolt_side_channel_listener *listener);
void bolt_side_channel_listener_close(struct bolt_side_channel_listener *listener);

/* Takes one pending connection: 0, -FI_EAGAIN when none is pending, or an error. */
int bolt_side_channel_accept(struct bolt_side_channel_listener *listener,
			     struct bolt_side_channel_stream *stream);

/*
 * Starts connecting to a listener. 0 means the attempt is under way: whether
 * it succeeds, progress tells (-FI_ECONNRESET when refused or unreachable).
 * Messages may be sent at once; they leave when the connection is up. Errors
 * returned here are local (bad address, no file descriptors). An IPv6
 * link-local address without a scope is reached through the interface that
 * holds it, else through via_scope (the interface of the caller's own
 * link-local listener, on the link the peers share; 0 for none), else through
 * the host's only interface with a link-local address. The stream fails
 * (-FI_ECONNRESET) when the peer's host stays silent for liveness_ms.
 */
int bolt_side_channel_connect(const struct sockaddr *address, socklen_t length, uint32_t via_scope,
			      const struct bolt_job_key *key, unsigned int liveness_ms,
			      struct bolt_side_channel_stream *stream);

/*
 * Queues one message and writes what the socket takes once the peer is
 * proven. type is neither 0 nor reserved; length is at most
 * BOLT_SIDE_CHANNEL_MAX_BODY (else -FI_EINVAL). -FI_EAGAIN
 * when the output buffer has no room: progress and try again.
 */
int bolt_side_channel_send(struct bolt_side_channel_stream *stream, uint16_t type,
			   const void *body, uint32_t length);

/*
 * Completes a pending connect, writes queued output, reads available input
 * and checks every frame header that has arrived. 0, -FI_ECONNRESET when the
 * connection failed or the peer closed or reset it, -FI_EPROTO on a malformed
 * frame. Errors are final: every later call returns the same one, and the
 * caller closes the stream.
 */
int bolt_side_channel_progress(struct bolt_side_channel_stream *stream);

/*
 * Takes one whole, checked message: 0, or -FI_EAGAIN when none has arrived
 * (yet), or the stream's error once the messages that came before it are
 * taken. -FI_ETOOSMALL when the body exceeds capacity: *length tells the
 * size and the message stays for another call.
 */
int bolt_side_channel_receive(struct bolt_side_channel_stream *stream, uint16_t *type,
			      void *body, uint32_t capacity, uint32_t *length);

/* Closes the socket; queued output is dropped. Harmless on a closed stream. */
void bolt_side_channel_stream_close(struct bolt_side_channel_stream *stream);

/*
 * For poll(): the stream's socket and the events to wait for (POLLIN, and
 * POLLOUT while connecting or while output is queued). Call progress before
 * sleeping: it may already have something to report.
 */
int bolt_side_channel_fd(const struct bolt_side_channel_stream *stream);
short bolt_side_channel_poll_events(const struct bolt_side_channel_stream *stream);

/*
 * For fuzzing and tests: a stream without a socket, that takes its input from
 * bolt_side_channel_feed. authenticated: as after the handshake, else as an
 * answerer waiting for the proof (what it sends fails: there is no socket).
 */
void bolt_side_channel_stream_detached(struct bolt_side_channel_stream *stream,
				       const struct bolt_job_key *key, bool authenticated);
/* Appends what fits of bytes to the input and checks it as progress does; *taken tells how much. */
int bolt_side_channel_feed(struct bolt_side_channel_stream *stream, const void *bytes,
			   uint32_t length, uint32_t *taken);

#endif /* BOLT_SIDE_CHANNEL_H */
