/*
 * test_side_channel.c: the side channel's transport over real sockets on
 * 127.0.0.1 only: listening and connecting, round trips of every size, frames
 * that arrive a byte at a time, each kind of malformed frame, peers that
 * close, refuse or are killed, a full output buffer, leaked descriptors, the
 * handshake that proves the job key (wrong keys, replays, refusals that look
 * and cost the same) and the job key's sources. Frames and MACs written by
 * hand here follow the wire format in bolt_side_channel.h independently of
 * the module's own encoder (libsodium's HMAC directly).
 */
#define _GNU_SOURCE     /* memmem */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <sodium.h>
#include <sys/stat.h>

#include "bolt.h"
#include "connection/bolt_job_key.h"
#include "connection/bolt_side_channel.h"

#define TEST_JOB_KEY "test-job"
#define DEADLINE_MS 2000
#define TEST_TYPE 7
/* Odd on purpose, so that a default cannot pass for it. */
#define TEST_LIVENESS_MS 7321

TestSuite(side_channel, .timeout = 20);

/* Streams are large (fixed buffers); each test runs in its own process. */
static struct bolt_side_channel_listener listener;
static struct bolt_side_channel_stream client, server;

static int64_t now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static const struct bolt_job_key *key_of(const char *text)
{
	static struct bolt_job_key keys[4];
	static const char *texts[4];

	for (int i = 0; i < 4; i++) {
		if (texts[i] && !strcmp(texts[i], text))
			return &keys[i];
		if (!texts[i]) {
			cr_assert_eq(bolt_job_key_load(text, NULL, &keys[i]), 0);
			texts[i] = text;
			return &keys[i];
		}
	}
	cr_assert_fail("too many keys");
	return NULL;
}

static const struct bolt_job_key *test_key(void)
{
	return key_of(TEST_JOB_KEY);
}

static struct sockaddr_in loopback_address(uint16_t port)
{
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(port) };

	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return address;
}

static uint16_t listener_port(void)
{
	return ntohs(((struct sockaddr_in *) &listener.address)->sin_port);
}

static void listen_on_loopback(void)
{
	struct sockaddr_in address = loopback_address(0);

	cr_assert_eq(bolt_side_channel_listen((struct sockaddr *) &address, sizeof(address),
					      test_key(), TEST_LIVENESS_MS, &listener), 0);
}

static int connect_to_listener(const struct bolt_job_key *key,
			       struct bolt_side_channel_stream *stream)
{
	struct sockaddr_in address = loopback_address(listener_port());

	return bolt_side_channel_connect((struct sockaddr *) &address, sizeof(address), 0, key,
					 TEST_LIVENESS_MS, stream);
}

/* Sleeps until fd has one of events or the deadline passes. */
static void wait_for(int fd, short events, int64_t deadline)
{
	struct pollfd pollfd = { .fd = fd, .events = events };
	int64_t remaining = deadline - now_ms();

	if (remaining > 0)
		poll(&pollfd, 1, (int) remaining);
}

static void wait_for_stream(const struct bolt_side_channel_stream *stream, int64_t deadline)
{
	wait_for(bolt_side_channel_fd(stream), bolt_side_channel_poll_events(stream), deadline);
}

static void accept_one(struct bolt_side_channel_stream *stream)
{
	int64_t deadline = now_ms() + DEADLINE_MS;
	int ret;

	while ((ret = bolt_side_channel_accept(&listener, stream)) == -FI_EAGAIN &&
	       now_ms() < deadline)
		wait_for(listener.fd, POLLIN, deadline);
	cr_assert_eq(ret, 0, "accept: %d", ret);
}

/* Progresses until the connect has completed and queued output has left. */
static void flush_stream(struct bolt_side_channel_stream *stream)
{
	int64_t deadline = now_ms() + DEADLINE_MS;

	for (;;) {
		cr_assert_eq(bolt_side_channel_progress(stream), 0);
		if (!(bolt_side_channel_poll_events(stream) & POLLOUT))
			return;
		cr_assert_lt(now_ms(), deadline, "output did not drain");
		wait_for_stream(stream, deadline);
	}
}

/*
 * Progresses the stream at the other end of stream, when this process holds
 * it (a test's streams start zeroed, fd 0, and closed ones hold -1): the
 * handshake needs both ends to move.
 */
static void progress_other_end(const struct bolt_side_channel_stream *stream)
{
	struct bolt_side_channel_stream *other = stream == &server ? &client : &server;

	if (other->fd > 0)
		(void) bolt_side_channel_progress(other);
}

/* Listener, client and server streams of the test's job, connected and proven. */
static void connect_pair(void)
{
	int64_t deadline = now_ms() + DEADLINE_MS;

	listen_on_loopback();
	cr_assert_eq(connect_to_listener(test_key(), &client), 0);
	accept_one(&server);
	while (!client.authenticated || !server.authenticated) {
		cr_assert_eq(bolt_side_channel_progress(&client), 0);
		cr_assert_eq(bolt_side_channel_progress(&server), 0);
		cr_assert_lt(now_ms(), deadline, "the handshake did not end");
		wait_for_stream(&client, now_ms() + 10);
	}
	flush_stream(&client);
}

static void close_pair(void)
{
	bolt_side_channel_stream_close(&client);
	bolt_side_channel_stream_close(&server);
	bolt_side_channel_listener_close(&listener);
}

/* Progress until the stream reports an error, or 0 at the deadline. */
static int progress_until_error(struct bolt_side_channel_stream *stream, int64_t deadline)
{
	int ret;

	while (!(ret = bolt_side_channel_progress(stream)) && now_ms() < deadline)
		wait_for_stream(stream, deadline);
	return ret;
}

/* receive, progressing while nothing has arrived; -FI_ETIMEDOUT at the deadline. */
static int receive_within_deadline(struct bolt_side_channel_stream *stream, uint16_t *type,
				   void *body, uint32_t capacity, uint32_t *length)
{
	int64_t deadline = now_ms() + DEADLINE_MS;
	int ret;

	for (;;) {
		/* An error is final; receive reports it once what came before is taken. */
		(void) bolt_side_channel_progress(stream);
		progress_other_end(stream);
		ret = bolt_side_channel_receive(stream, type, body, capacity, length);
		if (ret != -FI_EAGAIN)
			return ret;
		if (now_ms() >= deadline)
			return -FI_ETIMEDOUT;
		wait_for_stream(stream, now_ms() + 10 < deadline ? now_ms() + 10 : deadline);
	}
}

static void fill_body(uint8_t *body, uint32_t length, uint32_t seed)
{
	for (uint32_t i = 0; i < length; i++)
		body[i] = (uint8_t) (seed * 31 + i * 7);
}

static void expect_message(struct bolt_side_channel_stream *stream, uint16_t expected_type,
			   uint32_t expected_length, uint32_t seed)
{
	static uint8_t body[BOLT_SIDE_CHANNEL_MAX_BODY], expected[BOLT_SIDE_CHANNEL_MAX_BODY];
	uint32_t length = UINT32_MAX;
	uint16_t type = 0;

	cr_assert_eq(receive_within_deadline(stream, &type, body, sizeof(body), &length), 0);
	cr_assert_eq(type, expected_type);
	cr_assert_eq(length, expected_length);
	fill_body(expected, expected_length, seed);
	cr_assert_arr_eq(body, expected, length, "body of message %u differs", seed);
}

static void send_message(struct bolt_side_channel_stream *stream, uint16_t type,
			 uint32_t length, uint32_t seed)
{
	static uint8_t body[BOLT_SIDE_CHANNEL_MAX_BODY];
	int64_t deadline = now_ms() + DEADLINE_MS;
	int ret;

	fill_body(body, length, seed);
	while ((ret = bolt_side_channel_send(stream, type, body, length)) == -FI_EAGAIN &&
	       now_ms() < deadline) {
		cr_assert_eq(bolt_side_channel_progress(stream), 0);
		wait_for_stream(stream, deadline);
	}
	cr_assert_eq(ret, 0, "send: %d", ret);
}

/* A plain blocking socket connected to the listener, to write frames by hand. */
static int raw_connect(void)
{
	struct sockaddr_in address = loopback_address(listener_port());
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *) &address, sizeof(address)), 0);
	return fd;
}

static void raw_write(int fd, const void *bytes, size_t length)
{
	cr_assert_eq(send(fd, bytes, length, MSG_NOSIGNAL), (ssize_t) length);
}

struct test_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
};

static struct test_header valid_header(uint16_t type, uint32_t length)
{
	return (struct test_header) { BOLT_SIDE_CHANNEL_MAGIC, BOLT_SIDE_CHANNEL_VERSION, type,
				      length };
}

/* Writes a frame's bytes; returns their count. */
static size_t encode_frame(uint8_t *bytes, const struct test_header *header, const void *body,
			   size_t body_length)
{
	uint32_t magic = htonl(header->magic), length = htonl(header->length);
	uint16_t version = htons(header->version), type = htons(header->type);

	memcpy(bytes, &magic, 4);
	memcpy(bytes + 4, &version, 2);
	memcpy(bytes + 6, &type, 2);
	memcpy(bytes + 8, &length, 4);
	if (body_length)
		memcpy(bytes + 12, body, body_length);
	return 12 + body_length;
}

/* Reads exactly length bytes from a blocking socket. */
static void raw_read(int fd, void *bytes, size_t length)
{
	size_t done = 0;
	ssize_t chunk;

	while (done < length) {
		chunk = recv(fd, (uint8_t *) bytes + done, length - done, 0);
		cr_assert_gt(chunk, 0, "the peer closed or failed after %zu of %zu bytes", done,
			     length);
		done += (size_t) chunk;
	}
}

/* An address as the transcript holds it (IPv4 here): 4, the address, zeros, the port. */
static void transcript_address(const struct sockaddr_in *address, uint8_t *bytes)
{
	memset(bytes, 0, 19);
	bytes[0] = 4;
	memcpy(bytes + 1, &address->sin_addr, 4);
	memcpy(bytes + 17, &address->sin_port, 2);
}

/*
 * The MAC of the handshake's transcript under key: label, the answerer's
 * nonce, the connecter's nonce, the connecter's address, the answerer's.
 */
static void transcript_mac(const struct bolt_job_key *key, const char *label,
			   const uint8_t *answerer_nonce, const uint8_t *connecter_nonce,
			   const struct sockaddr_in *connecter, const struct sockaddr_in *answerer,
			   uint8_t *mac)
{
	uint8_t transcript[16 + 64 + 38] = { 0 };

	memcpy(transcript, label, strlen(label));
	memcpy(transcript + 16, answerer_nonce, 32);
	memcpy(transcript + 48, connecter_nonce, 32);
	transcript_address(connecter, transcript + 80);
	transcript_address(answerer, transcript + 99);
	crypto_auth_hmacsha256(mac, transcript, sizeof(transcript), key->mac_key);
}

static void socket_addresses(int fd, struct sockaddr_in *local, struct sockaddr_in *peer)
{
	socklen_t length = sizeof(*local);

	cr_assert_eq(getsockname(fd, (struct sockaddr *) local, &length), 0);
	length = sizeof(*peer);
	cr_assert_eq(getpeername(fd, (struct sockaddr *) peer, &length), 0);
}

/* Reads a frame of type with a body of length bytes; its body goes to body. */
static void raw_expect_frame(int fd, uint16_t type, uint32_t length, uint8_t *body)
{
	uint8_t header[12], expected[12];
	struct test_header want = valid_header(type, length);

	raw_read(fd, header, sizeof(header));
	encode_frame(expected, &want, NULL, 0);
	cr_assert_arr_eq(header, expected, sizeof(header), "not the expected frame 0x%x", type);
	raw_read(fd, body, length);
}

/*
 * A connecter's side of the handshake on raw_fd, proving key: reads the
 * challenge, writes the proof (its frame also to proof_frame when not NULL).
 */
static void raw_prove(int raw_fd, const struct bolt_job_key *key, uint8_t *proof_frame)
{
	uint8_t answerer_nonce[32], proof[64], frame[12 + 64];
	struct test_header header = valid_header(BOLT_SIDE_CHANNEL_PROOF, 64);
	struct sockaddr_in local, peer;

	raw_expect_frame(raw_fd, BOLT_SIDE_CHANNEL_CHALLENGE, 32, answerer_nonce);
	socket_addresses(raw_fd, &local, &peer);
	randombytes_buf(proof, 32);
	transcript_mac(key, "bolt-sc-v2-clnt", answerer_nonce, proof, &local, &peer, proof + 32);
	encode_frame(frame, &header, proof, sizeof(proof));
	raw_write(raw_fd, frame, sizeof(frame));
	if (proof_frame)
		memcpy(proof_frame, frame, sizeof(frame));
}

/* Progresses the server until it has taken the proof (0) or failed. */
static int progress_until_authenticated(struct bolt_side_channel_stream *stream)
{
	int64_t deadline = now_ms() + DEADLINE_MS;
	int ret;

	while (!(ret = bolt_side_channel_progress(stream)) && !stream->authenticated &&
	       now_ms() < deadline)
		wait_for_stream(stream, deadline);
	return ret ? ret : stream->authenticated ? 0 : -FI_ETIMEDOUT;
}

/* A raw connecter that has proven the test key to the server stream. */
static int raw_connect_proven(void)
{
	int raw_fd = raw_connect();

	accept_one(&server);
	raw_prove(raw_fd, test_key(), NULL);
	cr_assert_eq(progress_until_authenticated(&server), 0);
	return raw_fd;
}

/* Progresses the client until its proof has left. */
static void client_proves(void)
{
	int64_t deadline = now_ms() + DEADLINE_MS;

	while (!client.proved) {
		cr_assert_eq(bolt_side_channel_progress(&client), 0);
		cr_assert_lt(now_ms(), deadline, "the client did not answer the challenge");
		wait_for_stream(&client, deadline);
	}
	flush_stream(&client);
}

/*
 * An answerer's side of the handshake on raw_fd with key: challenge, the
 * client's proof checked (the documented MAC; neither the key nor its hash
 * travels), confirmation under key.
 */
static void raw_answer(int raw_fd, const struct bolt_job_key *key)
{
	uint8_t nonce[32], proof[64], expected[32], frame[12 + 32];
	struct test_header challenge = valid_header(BOLT_SIDE_CHANNEL_CHALLENGE, 32);
	struct test_header confirm = valid_header(BOLT_SIDE_CHANNEL_CONFIRM, 32);
	struct sockaddr_in local, peer;

	randombytes_buf(nonce, sizeof(nonce));
	raw_write(raw_fd, frame, encode_frame(frame, &challenge, nonce, 32));
	client_proves();
	raw_expect_frame(raw_fd, BOLT_SIDE_CHANNEL_PROOF, 64, proof);
	socket_addresses(raw_fd, &local, &peer);
	transcript_mac(test_key(), "bolt-sc-v2-clnt", nonce, proof, &peer, &local, expected);
	cr_assert_arr_eq(proof + 32, expected, 32, "the proof is not the documented MAC");
	cr_assert(!memmem(proof, sizeof(proof), TEST_JOB_KEY, strlen(TEST_JOB_KEY)));
	cr_assert(!memmem(proof, sizeof(proof), test_key()->mac_key, 8));
	transcript_mac(key, "bolt-sc-v2-srvr", nonce, proof, &peer, &local, expected);
	raw_write(raw_fd, frame, encode_frame(frame, &confirm, expected, 32));
}


static int count_open_fds(void)
{
	DIR *directory = opendir("/proc/self/fd");
	int count = 0;

	cr_assert_not_null(directory);
	while (readdir(directory))
		count++;
	closedir(directory);
	return count;
}

static bool fd_has_flag(int fd, int get_command, int flag)
{
	return fcntl(fd, get_command) & flag;
}

/* The socket option a stream's liveness watch rests on, as the kernel reports it. */
static int socket_option(const struct bolt_side_channel_stream *stream, int level, int name)
{
	socklen_t length = sizeof(int);
	int value = -1;

	cr_assert_eq(getsockopt(bolt_side_channel_fd(stream), level, name, &value, &length), 0);
	return value;
}

/* Both ends have the kernel watch the peer's host: probes when idle, the verdict at the limit. */
Test(side_channel, both_ends_watch_liveness)
{
	connect_pair();
	cr_assert_eq(socket_option(&client, IPPROTO_TCP, TCP_USER_TIMEOUT), TEST_LIVENESS_MS);
	cr_assert_eq(socket_option(&server, IPPROTO_TCP, TCP_USER_TIMEOUT), TEST_LIVENESS_MS);
	cr_assert_eq(socket_option(&client, SOL_SOCKET, SO_KEEPALIVE), 1);
	cr_assert_eq(socket_option(&server, SOL_SOCKET, SO_KEEPALIVE), 1);
	cr_assert_eq(socket_option(&server, IPPROTO_TCP, TCP_KEEPIDLE), 1);
	close_pair();
}

Test(side_channel, listen_reports_the_bound_port)
{
	struct sockaddr_in *bound;

	listen_on_loopback();
	bound = (struct sockaddr_in *) &listener.address;
	cr_assert_eq(bound->sin_family, AF_INET);
	cr_assert_eq(ntohl(bound->sin_addr.s_addr), INADDR_LOOPBACK);
	cr_assert_neq(listener_port(), 0);
	cr_assert(fd_has_flag(listener.fd, F_GETFL, O_NONBLOCK));
	cr_assert(fd_has_flag(listener.fd, F_GETFD, FD_CLOEXEC));
	cr_assert_eq(bolt_side_channel_accept(&listener, &server), -FI_EAGAIN);
	bolt_side_channel_listener_close(&listener);
	cr_assert_eq(listener.fd, -1);
	bolt_side_channel_listener_close(&listener);
}

Test(side_channel, a_message_sent_right_after_connect_arrives)
{
	int nodelay = 0;
	socklen_t length = sizeof(nodelay);

	listen_on_loopback();
	cr_assert_eq(connect_to_listener(test_key(), &client), 0);
	/* Sent before the server accepts, perhaps before the connect completes. */
	send_message(&client, TEST_TYPE, 3, 1);
	accept_one(&server);
	expect_message(&server, TEST_TYPE, 3, 1);
	send_message(&server, TEST_TYPE + 1, 5, 2);
	expect_message(&client, TEST_TYPE + 1, 5, 2);

	for (int i = 0; i < 2; i++) {
		int fd = bolt_side_channel_fd(i ? &server : &client);

		cr_assert(fd_has_flag(fd, F_GETFL, O_NONBLOCK));
		cr_assert(fd_has_flag(fd, F_GETFD, FD_CLOEXEC));
		cr_assert_eq(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &length), 0);
		cr_assert_neq(nodelay, 0);
	}
	close_pair();
}

Test(side_channel, round_trip_of_every_size)
{
	static const uint32_t sizes[] = {
		0, 1, 2, 3, 19, 20, 21, 255, 1024, 2048, BOLT_SIDE_CHANNEL_MAX_BODY - 1,
		BOLT_SIDE_CHANNEL_MAX_BODY, 0, BOLT_SIDE_CHANNEL_MAX_BODY, 1,
	};
	const uint32_t count = BOLT_ARRAY_LENGTH(sizes);

	connect_pair();
	/* All sent before any is read: several frames travel in one read. */
	for (uint32_t i = 0; i < count; i++)
		send_message(&client, (uint16_t) (i + 1), sizes[i], i);
	for (uint32_t i = 0; i < count; i++) {
		expect_message(&server, (uint16_t) (i + 1), sizes[i], i);
		send_message(&server, (uint16_t) (0xfeff - i), sizes[i], i + 100);
	}
	for (uint32_t i = 0; i < count; i++)
		expect_message(&client, (uint16_t) (0xfeff - i), sizes[i], i + 100);
	close_pair();
}

Test(side_channel, the_wire_format_is_the_documented_one)
{
	uint8_t expected[64], received[64];
	size_t expected_length;
	ssize_t received_length = 0, chunk;
	int raw_fd;

	listen_on_loopback();
	cr_assert_eq(connect_to_listener(test_key(), &client), 0);
	wait_for(listener.fd, POLLIN, now_ms() + DEADLINE_MS);
	raw_fd = accept(listener.fd, NULL, NULL);   /* blocking: accept does not inherit O_NONBLOCK */
	cr_assert_geq(raw_fd, 0);
	cr_assert_eq(bolt_side_channel_send(&client, 0x1234, "xyz", 3), 0);
	raw_answer(raw_fd, test_key());
	flush_stream(&client);

	struct test_header header = valid_header(0x1234, 3);

	expected_length = encode_frame(expected, &header, "xyz", 3);
	while (received_length < (ssize_t) expected_length) {
		chunk = recv(raw_fd, received + received_length, expected_length - received_length, 0);
		cr_assert_gt(chunk, 0);
		received_length += chunk;
	}
	cr_assert_arr_eq(received, expected, expected_length);
	close(raw_fd);
	close_pair();
}

Test(side_channel, a_frame_written_byte_by_byte_appears_only_when_whole)
{
	uint8_t frames[2 * BOLT_SIDE_CHANNEL_MAX_FRAME], body[32], received[32];
	struct test_header first = valid_header(TEST_TYPE, 5), second = valid_header(9, 0);
	size_t first_length, total;
	uint32_t length;
	uint16_t type;
	int raw_fd;

	listen_on_loopback();
	raw_fd = raw_connect_proven();
	fill_body(body, 5, 3);
	first_length = encode_frame(frames, &first, body, 5);
	total = first_length + encode_frame(frames + first_length, &second, NULL, 0);

	for (size_t i = 0; i < total; i++) {
		raw_write(raw_fd, frames + i, 1);
		/* The byte is in the socket: the stream turns readable. */
		wait_for(bolt_side_channel_fd(&server), POLLIN, now_ms() + DEADLINE_MS);
		cr_assert_eq(bolt_side_channel_progress(&server), 0);
		if (i + 1 != first_length && i + 1 != total) {
			cr_assert_eq(bolt_side_channel_receive(&server, &type, received,
						sizeof(received), &length), -FI_EAGAIN,
				     "message before byte %zu of %zu", i + 1, total);
			continue;
		}
		cr_assert_eq(bolt_side_channel_receive(&server, &type, received, sizeof(received),
						       &length), 0);
		cr_assert_eq(type, i + 1 == total ? 9 : TEST_TYPE);
		cr_assert_eq(length, i + 1 == total ? 0 : 5);
		cr_assert_arr_eq(received, body, length);
	}
	close(raw_fd);
	close_pair();
}

Test(side_channel, a_small_receive_buffer_leaves_the_message_in_place)
{
	uint8_t body[16];
	uint32_t length = 0;
	uint16_t type;

	connect_pair();
	send_message(&client, TEST_TYPE, 10, 4);
	cr_assert_eq(receive_within_deadline(&server, &type, body, 9, &length), -FI_ETOOSMALL);
	cr_assert_eq(length, 10);
	expect_message(&server, TEST_TYPE, 10, 4);
	close_pair();
}

Test(side_channel, send_refuses_type_zero_and_oversize_bodies)
{
	static uint8_t body[BOLT_SIDE_CHANNEL_MAX_BODY + 1];

	connect_pair();
	cr_assert_eq(bolt_side_channel_send(&client, 0, body, 1), -FI_EINVAL);
	cr_assert_eq(bolt_side_channel_send(&client, BOLT_SIDE_CHANNEL_PROOF, body, 1), -FI_EINVAL);
	cr_assert_eq(bolt_side_channel_send(&client, TEST_TYPE, body, sizeof(body)), -FI_EINVAL);
	cr_assert_eq(bolt_side_channel_send(&client, TEST_TYPE, NULL, 1), -FI_EINVAL);
	cr_assert_eq(bolt_side_channel_send(&client, TEST_TYPE, NULL, 0), 0);
	close_pair();
}

Test(side_channel, only_ipv4_and_ipv6_addresses_are_accepted)
{
	struct sockaddr_in address = loopback_address(0);
	struct sockaddr unix_address = { .sa_family = AF_UNIX };

	cr_assert_eq(bolt_side_channel_listen(&unix_address, sizeof(unix_address), test_key(),
					      TEST_LIVENESS_MS, &listener), -FI_EINVAL);
	cr_assert_eq(bolt_side_channel_connect((struct sockaddr *) &address, sizeof(address) - 1,
					       0, test_key(), TEST_LIVENESS_MS, &client), -FI_EINVAL);
	cr_assert_eq(client.fd, -1);
	bolt_side_channel_stream_close(&client);
}

struct malformed_case {
	const char *name;
	struct test_header header;
	uint32_t body_length;   /* bytes of body actually written */
};

ParameterizedTestParameters(side_channel, malformed_frames_are_refused)
{
	static struct malformed_case cases[] = {
		{ "bad magic", { 0x47455420, BOLT_SIDE_CHANNEL_VERSION, TEST_TYPE, 4 }, 4 },
		{ "unknown version", { BOLT_SIDE_CHANNEL_MAGIC, 3, TEST_TYPE, 4 }, 4 },
		{ "version 1, a digest in clear", { BOLT_SIDE_CHANNEL_MAGIC, 1, TEST_TYPE, 4 }, 4 },
		{ "version 0", { BOLT_SIDE_CHANNEL_MAGIC, 0, TEST_TYPE, 4 }, 4 },
		{ "type 0", { BOLT_SIDE_CHANNEL_MAGIC, BOLT_SIDE_CHANNEL_VERSION, 0, 4 }, 4 },
		{ "length above the maximum",
		  { BOLT_SIDE_CHANNEL_MAGIC, BOLT_SIDE_CHANNEL_VERSION, TEST_TYPE,
		    BOLT_SIDE_CHANNEL_MAX_BODY + 1 }, 0 },
		{ "length 4 GiB - 1",
		  { BOLT_SIDE_CHANNEL_MAGIC, BOLT_SIDE_CHANNEL_VERSION, TEST_TYPE, UINT32_MAX }, 0 },
		{ "a message before the handshake",
		  { BOLT_SIDE_CHANNEL_MAGIC, BOLT_SIDE_CHANNEL_VERSION, TEST_TYPE, 4 }, 4 },
	};

	return cr_make_param_array(struct malformed_case, cases, BOLT_ARRAY_LENGTH(cases));
}

ParameterizedTest(struct malformed_case *malformed, side_channel, malformed_frames_are_refused)
{
	uint8_t frame[64], body[4] = { 1, 2, 3, 4 }, received[8];
	struct test_header header = malformed->header;
	uint32_t length;
	uint16_t type;
	size_t frame_length;
	int raw_fd;

	listen_on_loopback();
	raw_fd = raw_connect();
	accept_one(&server);
	frame_length = encode_frame(frame, &header, body, malformed->body_length);
	raw_write(raw_fd, frame, frame_length);

	cr_assert_eq(progress_until_error(&server, now_ms() + DEADLINE_MS), -FI_EPROTO, "%s",
		     malformed->name);
	cr_assert_eq(bolt_side_channel_receive(&server, &type, received, sizeof(received),
					       &length), -FI_EPROTO, "%s", malformed->name);
	cr_assert_eq(bolt_side_channel_progress(&server), -FI_EPROTO);
	cr_assert_eq(bolt_side_channel_send(&server, TEST_TYPE, NULL, 0), -FI_EPROTO);
	close(raw_fd);
	close_pair();
}

Test(side_channel, messages_before_a_malformed_frame_are_delivered_first)
{
	uint8_t frames[128], body[4] = { 9, 8, 7, 6 }, received[8];
	struct test_header good = valid_header(TEST_TYPE, 4), bad = valid_header(0, 4);
	size_t length;
	uint32_t received_length;
	uint16_t type;
	int raw_fd;

	listen_on_loopback();
	raw_fd = raw_connect_proven();
	length = encode_frame(frames, &good, body, 4);
	length += encode_frame(frames + length, &bad, body, 4);
	raw_write(raw_fd, frames, length);

	cr_assert_eq(progress_until_error(&server, now_ms() + DEADLINE_MS), -FI_EPROTO);
	cr_assert_eq(bolt_side_channel_receive(&server, &type, received, sizeof(received),
					       &received_length), 0);
	cr_assert_arr_eq(received, body, 4);
	cr_assert_eq(bolt_side_channel_receive(&server, &type, received, sizeof(received),
					       &received_length), -FI_EPROTO);
	close(raw_fd);
	close_pair();
}

Test(side_channel, a_peer_with_another_job_key_is_refused)
{
	uint8_t body[8];
	uint32_t length;
	uint16_t type;

	listen_on_loopback();
	cr_assert_eq(connect_to_listener(key_of("another-job"), &client), 0);
	accept_one(&server);
	send_message(&client, TEST_TYPE, 4, 5);
	cr_assert_eq(receive_within_deadline(&server, &type, body, sizeof(body), &length),
		     -FI_EPROTO);
	cr_assert(!server.authenticated);
	/* The refused client learns it from the close, and has delivered nothing. */
	bolt_side_channel_stream_close(&server);
	cr_assert_eq(receive_within_deadline(&client, &type, body, sizeof(body), &length),
		     -FI_ECONNRESET);
	cr_assert(!client.authenticated);
	close_pair();
}

Test(side_channel, a_closed_peer_is_a_reset_after_its_last_messages)
{
	uint8_t body[8];
	uint32_t length;
	uint16_t type;

	connect_pair();
	send_message(&client, TEST_TYPE, 6, 6);
	flush_stream(&client);
	bolt_side_channel_stream_close(&client);

	expect_message(&server, TEST_TYPE, 6, 6);
	cr_assert_eq(receive_within_deadline(&server, &type, body, sizeof(body), &length),
		     -FI_ECONNRESET);
	cr_assert_eq(bolt_side_channel_progress(&server), -FI_ECONNRESET);
	cr_assert_eq(bolt_side_channel_send(&server, TEST_TYPE, NULL, 0), -FI_ECONNRESET);
	close_pair();
}

Test(side_channel, a_connect_to_a_closed_port_fails_in_progress)
{
	uint16_t port;

	/* A port that was just free: listen, note it, stop listening. */
	listen_on_loopback();
	port = listener_port();
	bolt_side_channel_listener_close(&listener);

	struct sockaddr_in address = loopback_address(port);

	cr_assert_eq(bolt_side_channel_connect((struct sockaddr *) &address, sizeof(address), 0,
					       test_key(), TEST_LIVENESS_MS, &client), 0);
	cr_assert_geq(bolt_side_channel_fd(&client), 0);
	cr_assert_eq(progress_until_error(&client, now_ms() + DEADLINE_MS), -FI_ECONNRESET);
	cr_assert_eq(bolt_side_channel_send(&client, TEST_TYPE, NULL, 0), -FI_ECONNRESET);
	bolt_side_channel_stream_close(&client);
}

Test(side_channel, a_full_output_buffer_is_eagain_until_the_peer_reads)
{
	static uint8_t body[BOLT_SIDE_CHANNEL_MAX_BODY];
	int small = 4096, queued = 0, received = 0, ret;
	int64_t deadline;

	connect_pair();
	/* Small kernel buffers make the stream's own buffer the limit sooner. */
	setsockopt(bolt_side_channel_fd(&client), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	for (;;) {
		fill_body(body, sizeof(body), (uint32_t) queued);
		ret = bolt_side_channel_send(&client, TEST_TYPE, body, sizeof(body));
		if (ret == -FI_EAGAIN)
			break;
		cr_assert_eq(ret, 0);
		cr_assert_lt(++queued, 100000, "the output never filled");
	}
	cr_assert_eq(bolt_side_channel_progress(&client), 0);
	cr_assert_eq(bolt_side_channel_send(&client, TEST_TYPE, body, sizeof(body)), -FI_EAGAIN);

	/* The peer reads everything, in order, while the client drains. */
	deadline = now_ms() + 10 * DEADLINE_MS;
	while (received < queued) {
		uint8_t message[BOLT_SIDE_CHANNEL_MAX_BODY];
		uint32_t length;
		uint16_t type;

		cr_assert_eq(bolt_side_channel_progress(&client), 0);
		ret = receive_within_deadline(&server, &type, message, sizeof(message), &length);
		cr_assert_eq(ret, 0, "message %d of %d: %d", received, queued, ret);
		fill_body(body, sizeof(body), (uint32_t) received);
		cr_assert_arr_eq(message, body, sizeof(body), "message %d", received);
		received++;
		cr_assert_lt(now_ms(), deadline);
	}
	send_message(&client, TEST_TYPE, 1, 1);
	expect_message(&server, TEST_TYPE, 1, 1);
	close_pair();
}

/* The child connects, says hello and waits to be killed. */
static void run_child_peer(void)
{
	int64_t deadline = now_ms() + DEADLINE_MS;

	bolt_side_channel_listener_close(&listener);
	if (connect_to_listener(test_key(), &client) ||
	    bolt_side_channel_send(&client, TEST_TYPE, "hello", 5))
		_exit(1);
	for (;;) {
		if (bolt_side_channel_progress(&client) || now_ms() > deadline)
			_exit(1);
		if (client.authenticated && !(bolt_side_channel_poll_events(&client) & POLLOUT))
			break;
		wait_for_stream(&client, deadline);
	}
	for (;;)
		pause();
}

Test(side_channel, a_killed_peer_is_a_reset_within_two_seconds)
{
	uint8_t body[8];
	uint32_t length;
	uint16_t type;
	int64_t killed_at;
	int status;
	pid_t child;

	listen_on_loopback();
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		run_child_peer();
	accept_one(&server);
	cr_assert_eq(receive_within_deadline(&server, &type, body, sizeof(body), &length), 0);
	cr_assert_arr_eq(body, "hello", 5);

	cr_assert_eq(kill(child, SIGKILL), 0);
	killed_at = now_ms();
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	cr_assert_eq(progress_until_error(&server, killed_at + DEADLINE_MS), -FI_ECONNRESET);
	cr_assert_lt(now_ms() - killed_at, DEADLINE_MS);
	close_pair();
}

Test(side_channel, no_file_descriptor_outlives_its_object)
{
	int before = count_open_fds();
	uint8_t frame[64];
	struct test_header bad = valid_header(0, 0);
	int raw_fd;

	for (int round = 0; round < 3; round++) {
		connect_pair();
		send_message(&client, TEST_TYPE, 8, 1);
		expect_message(&server, TEST_TYPE, 8, 1);
		bolt_side_channel_stream_close(&client);
		bolt_side_channel_stream_close(&server);

		raw_fd = raw_connect();
		accept_one(&server);
		raw_write(raw_fd, frame, encode_frame(frame, &bad, NULL, 0));
		cr_assert_eq(progress_until_error(&server, now_ms() + DEADLINE_MS), -FI_EPROTO);
		close(raw_fd);
		bolt_side_channel_stream_close(&server);

		struct sockaddr_in address = loopback_address(listener_port());

		bolt_side_channel_listener_close(&listener);
		cr_assert_eq(bolt_side_channel_connect((struct sockaddr *) &address,
						       sizeof(address), 0, test_key(), TEST_LIVENESS_MS,
						       &client), 0);
		cr_assert_eq(progress_until_error(&client, now_ms() + DEADLINE_MS),
			     -FI_ECONNRESET);
		close_pair();
		/* Closing twice is harmless and closes nothing else. */
		close_pair();
	}
	cr_assert_eq(count_open_fds(), before);
}

Test(side_channel, a_server_without_the_key_is_refused_and_hears_nothing)
{
	uint8_t nonce[32], proof[64], wrong[32], frame[12 + 32], rest[64];
	struct test_header challenge = valid_header(BOLT_SIDE_CHANNEL_CHALLENGE, 32);
	struct test_header confirm = valid_header(BOLT_SIDE_CHANNEL_CONFIRM, 32);
	struct sockaddr_in local, peer;
	int raw_fd;

	listen_on_loopback();
	cr_assert_eq(connect_to_listener(test_key(), &client), 0);
	wait_for(listener.fd, POLLIN, now_ms() + DEADLINE_MS);
	raw_fd = accept(listener.fd, NULL, NULL);
	cr_assert_geq(raw_fd, 0);
	send_message(&client, TEST_TYPE, 16, 7);    /* must not leave before the server is proven */
	randombytes_buf(nonce, sizeof(nonce));
	raw_write(raw_fd, frame, encode_frame(frame, &challenge, nonce, 32));
	client_proves();
	raw_expect_frame(raw_fd, BOLT_SIDE_CHANNEL_PROOF, 64, proof);
	socket_addresses(raw_fd, &local, &peer);
	transcript_mac(key_of("another-job"), "bolt-sc-v2-srvr", nonce, proof, &peer, &local, wrong);
	raw_write(raw_fd, frame, encode_frame(frame, &confirm, wrong, 32));

	cr_assert_eq(progress_until_error(&client, now_ms() + DEADLINE_MS), -FI_EPROTO);
	cr_assert(!client.authenticated);
	bolt_side_channel_stream_close(&client);
	/* After the proof, only the close: the queued message never left. */
	cr_assert_eq(recv(raw_fd, rest, sizeof(rest), 0), 0);
	close(raw_fd);
	close_pair();
}

Test(side_channel, a_replayed_proof_is_refused_on_a_new_connection)
{
	uint8_t captured[12 + 64], body[8];
	uint32_t length;
	uint16_t type;
	int raw_fd;

	listen_on_loopback();
	raw_fd = raw_connect();
	accept_one(&server);
	raw_prove(raw_fd, test_key(), captured);
	cr_assert_eq(progress_until_authenticated(&server), 0);
	close(raw_fd);
	bolt_side_channel_stream_close(&server);

	/* The same proof, byte for byte, on a new connection: its challenge is another. */
	raw_fd = raw_connect();
	accept_one(&server);
	raw_write(raw_fd, captured, sizeof(captured));
	cr_assert_eq(receive_within_deadline(&server, &type, body, sizeof(body), &length),
		     -FI_EPROTO);
	cr_assert(!server.authenticated);
	close(raw_fd);
	close_pair();
}

Test(side_channel, a_captured_message_replayed_without_the_handshake_is_refused)
{
	uint8_t frame[64], body[8];
	struct test_header hello = valid_header(1, 4);
	uint32_t length;
	uint16_t type;
	int raw_fd;

	listen_on_loopback();
	raw_fd = raw_connect();
	accept_one(&server);
	raw_write(raw_fd, frame, encode_frame(frame, &hello, "helo", 4));
	cr_assert_eq(receive_within_deadline(&server, &type, body, sizeof(body), &length),
		     -FI_EPROTO);
	close(raw_fd);
	close_pair();
}

enum refusal { WRONG_KEY, WRONG_NONCE, WRONG_TYPE, WRONG_LENGTH, REFUSAL_COUNT };
static const char *const refusal_names[] = {
	"MAC under another key", "right MAC, altered body", "a message instead of the proof",
	"proof of the wrong length",
};

/* The bytes of a refused proof of kind refusal; returns their count. */
static size_t refused_proof(int raw_fd, enum refusal refusal, uint8_t *frame)
{
	uint8_t nonce[32], proof[64];
	struct sockaddr_in local, peer;
	const struct bolt_job_key *key = refusal == WRONG_KEY ? key_of("another-job") : test_key();
	struct test_header header = valid_header(refusal == WRONG_TYPE ? TEST_TYPE :
						 BOLT_SIDE_CHANNEL_PROOF,
						 refusal == WRONG_LENGTH ? 63 : 64);

	raw_expect_frame(raw_fd, BOLT_SIDE_CHANNEL_CHALLENGE, 32, nonce);
	socket_addresses(raw_fd, &local, &peer);
	randombytes_buf(proof, 32);
	transcript_mac(key, "bolt-sc-v2-clnt", nonce, proof, &local, &peer, proof + 32);
	if (refusal == WRONG_NONCE)
		proof[5] ^= 1;
	return encode_frame(frame, &header, proof, header.length);
}

static int64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t) now.tv_sec * 1000000000 + now.tv_nsec;
}

static int compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/*
 * One refusal: everything but the last byte keeps the connection open and
 * answers nothing; the last byte fails it. Returns the nanoseconds the
 * server's progress took to refuse.
 */
static int64_t refuse_once(enum refusal refusal)
{
	uint8_t frame[12 + 64], rest[16];
	struct pollfd pollfd;
	size_t length;
	int64_t start, elapsed;
	int raw_fd, ret;

	raw_fd = raw_connect();
	accept_one(&server);
	length = refused_proof(raw_fd, refusal, frame);
	raw_write(raw_fd, frame, length - 1);
	wait_for(bolt_side_channel_fd(&server), POLLIN, now_ms() + DEADLINE_MS);
	cr_assert_eq(bolt_side_channel_progress(&server), 0, "%s: closed early",
		     refusal_names[refusal]);
	pollfd = (struct pollfd) { .fd = raw_fd, .events = POLLIN };
	cr_assert_eq(poll(&pollfd, 1, 20), 0, "%s: the server answered early",
		     refusal_names[refusal]);
	raw_write(raw_fd, frame + length - 1, 1);
	wait_for(bolt_side_channel_fd(&server), POLLIN, now_ms() + DEADLINE_MS);
	start = now_ns();
	ret = bolt_side_channel_progress(&server);
	elapsed = now_ns() - start;
	cr_assert_eq(ret, -FI_EPROTO, "%s: %d", refusal_names[refusal], ret);
	bolt_side_channel_stream_close(&server);
	cr_assert_eq(recv(raw_fd, rest, sizeof(rest), 0), 0, "%s: not a plain close",
		     refusal_names[refusal]);
	close(raw_fd);
	return elapsed;
}

Test(side_channel, every_refusal_looks_and_costs_the_same)
{
	enum { ROUNDS = 15 };
	int64_t times[REFUSAL_COUNT][ROUNDS], medians[REFUSAL_COUNT], low, high;

	listen_on_loopback();
	for (int round = 0; round < ROUNDS; round++)
		for (int refusal = 0; refusal < REFUSAL_COUNT; refusal++)
			times[refusal][round] = refuse_once((enum refusal) refusal);
	low = INT64_MAX;
	high = 0;
	for (int refusal = 0; refusal < REFUSAL_COUNT; refusal++) {
		qsort(times[refusal], ROUNDS, sizeof(int64_t), compare_int64);
		medians[refusal] = times[refusal][ROUNDS / 2];
		low = medians[refusal] < low ? medians[refusal] : low;
		high = medians[refusal] > high ? medians[refusal] : high;
	}
	/* The work is the same (a MAC and a compare); the bound leaves room for a busy host. */
	cr_assert_lt(high - low, 200000, "medians %lld %lld %lld %lld ns",
		     (long long) medians[0], (long long) medians[1], (long long) medians[2],
		     (long long) medians[3]);
	bolt_side_channel_listener_close(&listener);
}

Test(job_key, one_key_one_mac_key_and_the_key_is_not_kept)
{
	struct bolt_job_key a, b, c;

	cr_assert_eq(bolt_job_key_load("job-1", NULL, &a), 0);
	cr_assert_eq(bolt_job_key_load("job-1", "", &b), 0);
	cr_assert_eq(bolt_job_key_load("job-2", NULL, &c), 0);
	cr_assert(a.secret);
	cr_assert_arr_eq(a.mac_key, b.mac_key, sizeof(a.mac_key));
	cr_assert_arr_neq(a.mac_key, c.mac_key, sizeof(a.mac_key));
	cr_assert(!memmem(&a, sizeof(a), "job-1", 5));
	bolt_job_key_clear(&a);
	cr_assert_eq(a.secret, false);
}

Test(job_key, unset_key_is_the_user_id_and_not_secret)
{
	struct bolt_job_key unset, empty, uid, other;
	char expected[32];

	snprintf(expected, sizeof(expected), "uid:%lu", (unsigned long) getuid());
	cr_assert_eq(bolt_job_key_load(NULL, NULL, &unset), 0);
	cr_assert_eq(bolt_job_key_load("", "", &empty), 0);
	cr_assert_eq(bolt_job_key_load(expected, NULL, &uid), 0);
	cr_assert_eq(bolt_job_key_load("uid:999999", NULL, &other), 0);
	cr_assert(!unset.secret);
	cr_assert_arr_eq(unset.mac_key, empty.mac_key, sizeof(unset.mac_key));
	cr_assert_arr_eq(unset.mac_key, uid.mac_key, sizeof(unset.mac_key));
	cr_assert_arr_neq(unset.mac_key, other.mac_key, sizeof(unset.mac_key));
}

Test(job_key, a_key_file_is_the_key_and_must_be_private)
{
	char path[] = "/tmp/bolt-job-key-XXXXXX";
	struct bolt_job_key from_file, from_text;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "file-key\n", 9), 9);
	close(fd);
	cr_assert_eq(chmod(path, 0600), 0);
	cr_assert_eq(bolt_job_key_load(NULL, path, &from_file), 0);
	cr_assert_eq(bolt_job_key_load("file-key", NULL, &from_text), 0);
	cr_assert(from_file.secret);
	cr_assert_arr_eq(from_file.mac_key, from_text.mac_key, sizeof(from_file.mac_key));
	cr_assert_eq(bolt_job_key_load("file-key", path, &from_file), -FI_EINVAL);
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(bolt_job_key_load(NULL, path, &from_file), -FI_EACCES);
	unlink(path);
	cr_assert_lt(bolt_job_key_load(NULL, path, &from_file), 0);
}
