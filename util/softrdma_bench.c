/*
 * softrdma_bench.c: how fast the software RDMA device moves data between two
 * processes (this one and a forked child) on one device: RDMA write
 * bandwidth against single-thread memcpy on the same machine, then SEND/RECV
 * ping-pong latency. Usage: softrdma_bench [thunderbolt|rocev2] [--floor]
 * (default: $FI_BOLT_SOFT, else rocev2).
 *
 * Then the SEND message rate: windows of BENCH_IN_FLIGHT small messages, each
 * window acknowledged by the target, what a message costs the device's two
 * processes when many are queued (a collective of small messages sends
 * several at once), where the ping-pong gives what one costs alone; and the
 * exchange, both sides sending at once and each waiting for the other's
 * message: what a two-member all-reduce of small messages costs on the device.
 *
 * softrdma_bench [PROFILE] --floor: only the one-way, exchange and rate
 * figures, as rows for a script, from 4 B to 1 MiB: what a collective cannot
 * beat on this device (bolt_collective_compare.sh).
 *
 * softrdma_bench --memcpy-processes N: what the machine's memory gives N
 * processes copying 64 MiB at once, in all: the ceiling of anything N local
 * ranks do by copying, collectives included (every byte the software device
 * moves is a copy).
 *
 * softrdma_bench [PROFILE] --write-processes N: what the device gives N
 * processes RDMA-writing 64 MiB at once, each into a process of its own, in
 * all: the ceiling of what N local ranks move through the device. Its
 * writes are the kernel's cross-memory copies, slower than a memcpy (the
 * bandwidth table's ratio), and a collective's transfers can go no faster.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_buffer.h"
#include "softrdma/softrdma.h"
#include "softrdma_peer.h"

#define BENCH_MAX_SIZE (64u << 20)
#define BENCH_IN_FLIGHT 16          /* within thunderbolt's 63, as MLX keeps to 32 */
#define BENCH_BYTES_PER_SIZE (1ull << 30)
#define BENCH_TIMEOUT_MS 10000
#define BENCH_FLOOR_MAX_SIZE (1u << 20)

/* One side: the device, a registered buffer, a QP connected to the other side. */
struct bench_side {
	struct test_side end;
	int to_peer;            /* pipe ends: the side channel */
	int from_peer;
};

enum bench_mode {
	BENCH_PING,             /* answer each message with one of the same size */
	BENCH_RATE,             /* acknowledge each window of BENCH_IN_FLIGHT messages */
	BENCH_EXCHANGE,         /* send one as the other side does, each receive posted ahead */
};

/* What the initiator asks of the target before each latency or rate size. */
struct bench_request {
	uint32_t size;          /* 0: done */
	uint32_t iterations;    /* for BENCH_RATE, a multiple of BENCH_IN_FLIGHT */
	uint32_t mode;
};

static double bench_now(void)
{
	return (double) test_now_ns() * 1e-9;
}

static int bench_fail(const char *call, int error)
{
	fprintf(stderr, "softrdma_bench: %s failed: %s\n", call, strerror(error));
	return -1;
}

static int bench_write_all(int fd, const void *data, size_t size)
{
	int ret = test_write_all(fd, data, size);

	return ret ? bench_fail("write to the side channel", ret) : 0;
}

static int bench_read_all(int fd, void *data, size_t size)
{
	int ret = test_read_all(fd, data, size, BENCH_TIMEOUT_MS);

	return ret ? bench_fail("read from the side channel", ret) : 0;
}

static int bench_create_objects(struct bench_side *side, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = side->end.device.cq, .recv_cq = side->end.device.cq, .qp_type = type,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	/* The collective benchmarks' kind of memory: what the ceilings are for. */
	side->end.buffer = bench_buffer_allocate(BENCH_MAX_SIZE);
	if (!side->end.buffer)
		return bench_fail("malloc", ENOMEM);
	/*
	 * Every page written now: an untouched buffer reads as the kernel's one
	 * zero page, always in cache, and would make every copy look faster.
	 */
	for (size_t index = 0; index < BENCH_MAX_SIZE; index++)
		side->end.buffer[index] = (char) (index * 7 + 1);
	side->end.mr = softrdma_reg_mr(side->end.device.pd, side->end.buffer, BENCH_MAX_SIZE,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!side->end.mr)
		return bench_fail("reg_mr", errno);
	side->end.qp = softrdma_create_qp(side->end.device.pd, &attr);
	if (!side->end.qp)
		return bench_fail("create_qp", errno);
	if (test_address_of(&side->end.device, side->end.qp, side->end.mr, &side->end.self))
		return bench_fail("query_gid", errno);
	return 0;
}

/* As the tests connect, but at the port's MTU and with RC's longer timeout. */
static int bench_connect(struct bench_side *side)
{
	struct ibv_port_attr port;
	int ret;

	if (softrdma_query_port(side->end.device.context, 1, &port))
		return bench_fail("query_port", errno);
	ret = test_qp_init(side->end.qp, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (ret)
		return bench_fail("modify_qp to INIT", ret);
	ret = test_qp_rtr(side->end.qp, &side->end.peer, TEST_GID_INDEX, port.active_mtu);
	if (ret)
		return bench_fail("modify_qp to RTR", ret);
	ret = test_qp_rts(side->end.qp, 14, 7);
	return ret ? bench_fail("modify_qp to RTS", ret) : 0;
}

/* Exchanges addresses, connects, and waits until the peer is connected too. */
static int bench_side_open(struct bench_side *side, const struct softrdma_config *config,
			   enum ibv_qp_type type)
{
	char ready = 1;
	int ret = softrdma_attach(config);

	if (ret)
		return bench_fail("softrdma_attach", -ret);
	ret = test_device_open(&side->end.device, 0);
	if (ret)
		return bench_fail("opening the device, a PD and a CQ", ret);
	if (bench_create_objects(side, type) ||
	    bench_write_all(side->to_peer, &side->end.self, sizeof(side->end.self)) ||
	    bench_read_all(side->from_peer, &side->end.peer, sizeof(side->end.peer)) ||
	    bench_connect(side) || bench_write_all(side->to_peer, &ready, 1) ||
	    bench_read_all(side->from_peer, &ready, 1))
		return -1;
	return 0;
}

/* Polls until `receives` receive and `sends` send completions have arrived. */
static int bench_wait(struct bench_side *side, int receives, int sends)
{
	double deadline = bench_now() + BENCH_TIMEOUT_MS / 1000.0;
	struct ibv_wc wc;

	while (receives > 0 || sends > 0) {
		int got = softrdma_poll_cq(side->end.device.cq, 1, &wc);

		if (got < 0)
			return bench_fail("poll_cq", -got);
		if (got && wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "softrdma_bench: completion: %s\n",
				softrdma_wc_status_str(wc.status));
			return -1;
		}
		if (got && wc.opcode == IBV_WC_RECV)
			receives--;
		else if (got)
			sends--;
		else if (bench_now() > deadline)
			return bench_fail("waiting for a completion", ETIMEDOUT);
	}
	return 0;
}

static int bench_post(struct bench_side *side, enum ibv_wr_opcode opcode, uint32_t size)
{
	int ret = test_post_send(side->end.qp, opcode, side->end.mr, 0, size, &side->end.peer,
				 0, 0, IBV_SEND_SIGNALED, 0);

	return ret ? bench_fail("post_send", ret) : 0;
}

static int bench_post_receive(struct bench_side *side, uint32_t size)
{
	int ret = test_post_recv(side->end.qp, side->end.mr, 0, size, 0);

	return ret ? bench_fail("post_recv", ret) : 0;
}

static uint32_t bench_iterations(uint64_t size, uint64_t bytes, uint32_t least)
{
	uint64_t iterations = bytes / size;

	return iterations < least ? least : (uint32_t) iterations;
}

/* Messages one at a time: 256 MiB of them, at least 2000 and at most 20000. */
static uint32_t bench_message_iterations(uint32_t size)
{
	uint32_t iterations = bench_iterations(size, 256u << 20, 2000);

	return iterations > 20000 ? 20000 : iterations;
}

/* Seconds for `iterations` writes of size bytes, BENCH_IN_FLIGHT at a time. */
static int bench_write_time(struct bench_side *side, uint32_t size, uint32_t iterations,
			    double *seconds)
{
	uint32_t posted = 0, completed = 0;
	double start = bench_now();

	while (completed < iterations) {
		while (posted < iterations && posted - completed < BENCH_IN_FLIGHT) {
			if (bench_post(side, IBV_WR_RDMA_WRITE, size))
				return -1;
			posted++;
		}
		if (bench_wait(side, 0, 1))
			return -1;
		completed++;
	}
	*seconds = bench_now() - start;
	return 0;
}

static double bench_memcpy_time(char *destination, const char *source, uint32_t size,
				uint32_t iterations)
{
	double start = bench_now();

	for (uint32_t index = 0; index < iterations; index++) {
		memcpy(destination, source, size);
		/* Keeps the compiler from merging or dropping the copies. */
		__asm__ volatile("" : : "r"(destination) : "memory");
	}
	return bench_now() - start;
}

static int bench_bandwidth(struct bench_side *side)
{
	char *destination = bench_buffer_allocate(BENCH_MAX_SIZE);

	if (!destination)
		return bench_fail("malloc", ENOMEM);
	memset(destination, 1, BENCH_MAX_SIZE);
	printf("# RDMA write bandwidth (%d in flight) vs single-thread memcpy, GB/s = 1e9 B/s\n",
	       BENCH_IN_FLIGHT);
	printf("# %10s %8s %12s %12s %8s\n", "size", "iters", "write GB/s", "memcpy GB/s", "ratio");
	for (uint32_t size = 4096; size <= BENCH_MAX_SIZE; size *= 4) {
		uint32_t iterations = bench_iterations(size, BENCH_BYTES_PER_SIZE, 16);
		double write_seconds, memcpy_seconds, write_rate, memcpy_rate;

		if (bench_write_time(side, size, iterations / 8, &write_seconds) ||
		    bench_write_time(side, size, iterations, &write_seconds)) {
			free(destination);
			return -1;
		}
		bench_memcpy_time(destination, side->end.buffer, size, iterations / 8);
		memcpy_seconds = bench_memcpy_time(destination, side->end.buffer, size, iterations);
		write_rate = (double) size * iterations / write_seconds / 1e9;
		memcpy_rate = (double) size * iterations / memcpy_seconds / 1e9;
		printf("  %10u %8u %12.2f %12.2f %8.2f\n", size, iterations, write_rate,
		       memcpy_rate, write_rate / memcpy_rate);
		fflush(stdout);
	}
	free(destination);
	return 0;
}

/*
 * One exchange of mode: a ping and its pong; or a window of BENCH_IN_FLIGHT
 * SENDs, whose acknowledgement's receive is posted before the window goes
 * and whose arrival says the target has taken the window and posted its
 * receives again; or a message each way at once, the receive for the next
 * one posted before this one goes (unless last), since the peer sends its
 * next as soon as it has this one. The messages it sends.
 */
static int bench_exchange(struct bench_side *side, uint32_t size, enum bench_mode mode, bool last)
{
	int messages = mode == BENCH_RATE ? BENCH_IN_FLIGHT : 1;

	if ((mode != BENCH_EXCHANGE || !last) && bench_post_receive(side, size))
		return -1;
	for (int index = 0; index < messages; index++)
		if (bench_post(side, IBV_WR_SEND, size))
			return -1;
	return bench_wait(side, 1, messages) ? -1 : messages;
}

/* Seconds for iterations messages of size bytes in exchanges of mode, once the target is ready. */
static int bench_run(struct bench_side *side, uint32_t size, uint32_t iterations,
		     enum bench_mode mode, double *seconds)
{
	struct bench_request request = { size, iterations, mode };
	double start;
	char ready;

	/* An exchange's first message may come as soon as the target is ready. */
	if ((mode == BENCH_EXCHANGE && bench_post_receive(side, size)) ||
	    bench_write_all(side->to_peer, &request, sizeof(request)) ||
	    bench_read_all(side->from_peer, &ready, 1))
		return -1;
	start = bench_now();
	for (uint32_t sent = 0; sent < iterations;) {
		int messages = bench_exchange(side, size, mode, sent + 1 >= iterations);

		if (messages < 0)
			return -1;
		sent += (uint32_t) messages;
	}
	*seconds = bench_now() - start;
	return 0;
}

/* Iterations of mode for messages of size: a rate run's in whole windows. */
static uint32_t bench_mode_iterations(uint32_t iterations, enum bench_mode mode)
{
	return mode == BENCH_RATE ? iterations / BENCH_IN_FLIGHT * BENCH_IN_FLIGHT : iterations;
}

/*
 * Microseconds a message of size costs in mode, over iterations (whole
 * windows for a rate) after a tenth as many to warm up: half a ping-pong's
 * round trip, one message of a rate run, or one exchange.
 */
static int bench_figure(struct bench_side *side, uint32_t size, uint32_t iterations,
			enum bench_mode mode, double *microseconds)
{
	double seconds;

	if (bench_run(side, size, bench_mode_iterations(iterations / 10, mode), mode, &seconds) ||
	    bench_run(side, size, iterations, mode, &seconds))
		return -1;
	*microseconds = seconds / iterations * 1e6 / (mode == BENCH_PING ? 2 : 1);
	return 0;
}

/* One table: a row per size of what a message costs in mode. */
static int bench_table(struct bench_side *side, enum bench_mode mode, const uint32_t *sizes,
		       size_t count)
{
	static const char *const units[] = {
		[BENCH_PING] = "latency us", [BENCH_RATE] = "us/message",
		[BENCH_EXCHANGE] = "us/exchange",
	};

	if (mode == BENCH_PING)
		printf("# SEND/RECV ping-pong latency, half round trip\n");
	else if (mode == BENCH_RATE)
		printf("# SEND message rate, windows of %d each acknowledged\n", BENCH_IN_FLIGHT);
	else
		printf("# SEND/RECV exchange, a message each way at once, as a two-member all-reduce's\n");
	printf("# %10s %8s %12s\n", "size", "iters", units[mode]);
	for (size_t index = 0; index < count; index++) {
		uint32_t iterations = bench_mode_iterations(bench_message_iterations(sizes[index]), mode);
		double microseconds;

		if (bench_figure(side, sizes[index], iterations, mode, &microseconds))
			return -1;
		printf("  %10u %8u %12.*f\n", sizes[index], iterations, mode == BENCH_PING ? 2 : 3,
		       microseconds);
		fflush(stdout);
	}
	return 0;
}

static int bench_tables(struct bench_side *side)
{
	static const uint32_t latency_sizes[] = { 8, 64, 512, 4096, 16384, 65536 };
	static const uint32_t rate_sizes[] = { 8, 64, 512 };
	/* Up to where a two-member collective stops sending each message whole. */
	static const uint32_t exchange_sizes[] = { 8, 64, 512, 4096, 16384, 65536, 262144 };

	return bench_table(side, BENCH_PING, latency_sizes,
			   sizeof(latency_sizes) / sizeof(latency_sizes[0])) ||
	       bench_table(side, BENCH_RATE, rate_sizes, sizeof(rate_sizes) / sizeof(rate_sizes[0])) ||
	       bench_table(side, BENCH_EXCHANGE, exchange_sizes,
			   sizeof(exchange_sizes) / sizeof(exchange_sizes[0])) ? -1 : 0;
}

/*
 * --floor: what a collective cannot beat on this device, by message size, a
 * row each: "floor SIZE ONE_WAY_US EXCHANGE_US RATE_US". A two-member
 * broadcast's one message costs at least the one way; an all-reduce, an
 * all-gather or a reduce-scatter, whose every member needs data from the
 * other, at least the exchange of the bytes each sends; a broadcast's root
 * sends a message to each other member, each at least what one costs when
 * many are queued (the rate).
 */
static int bench_floor(struct bench_side *side)
{
	printf("# the device's floor: one message (half a ping-pong), one exchange, and one message "
	       "of many queued (the rate), in us\n");
	printf("# floor %10s %12s %12s %12s\n", "size", "one_way_us", "exchange_us", "rate_us");
	for (uint32_t size = 4; size <= BENCH_FLOOR_MAX_SIZE; size *= 2) {
		uint32_t iterations = bench_message_iterations(size);
		double one_way, exchange, rate;

		if (bench_figure(side, size, iterations, BENCH_PING, &one_way) ||
		    bench_figure(side, size, iterations, BENCH_EXCHANGE, &exchange) ||
		    bench_figure(side, size, bench_mode_iterations(iterations, BENCH_RATE), BENCH_RATE,
				 &rate))
			return -1;
		printf("floor %12u %12.3f %12.3f %12.3f\n", size, one_way, exchange, rate);
		fflush(stdout);
	}
	return 0;
}

/* The target: answers each ping with a pong of the same size. */
static int bench_pong(struct bench_side *side, const struct bench_request *request)
{
	char ready = 1;

	if (bench_post_receive(side, request->size) ||
	    bench_write_all(side->to_peer, &ready, 1))
		return -1;
	for (uint32_t index = 0; index < request->iterations; index++) {
		if (bench_wait(side, 1, 0))
			return -1;
		if (index + 1 < request->iterations && bench_post_receive(side, request->size))
			return -1;
		if (bench_post(side, IBV_WR_SEND, request->size) || bench_wait(side, 0, 1))
			return -1;
	}
	return 0;
}

/*
 * The target of a rate run: a receive for each message of a window, each
 * posted again as its message arrives (but the last window's, which would
 * take the next request's messages), and an acknowledgement per window.
 */
static int bench_sink(struct bench_side *side, const struct bench_request *request)
{
	char ready = 1;

	for (int index = 0; index < BENCH_IN_FLIGHT; index++)
		if (bench_post_receive(side, request->size))
			return -1;
	if (bench_write_all(side->to_peer, &ready, 1))
		return -1;
	for (uint32_t index = 0; index < request->iterations; index++) {
		bool last = index + BENCH_IN_FLIGHT >= request->iterations;

		if (bench_wait(side, 1, 0) || (!last && bench_post_receive(side, request->size)))
			return -1;
		/*
		 * Not waited for here: the next window may arrive first, and a
		 * wait for a receive takes a send's completion in passing.
		 */
		if ((index + 1) % BENCH_IN_FLIGHT == 0 && bench_post(side, IBV_WR_SEND, request->size))
			return -1;
	}
	/* The last acknowledgement's completion, which no later receive takes in passing. */
	return bench_wait(side, 0, 1);
}

/* The target of an exchange: the initiator's loop, from the other side. */
static int bench_swap(struct bench_side *side, const struct bench_request *request)
{
	char ready = 1;

	if (bench_post_receive(side, request->size) || bench_write_all(side->to_peer, &ready, 1))
		return -1;
	for (uint32_t index = 0; index < request->iterations; index++)
		if (bench_exchange(side, request->size, BENCH_EXCHANGE,
				   index + 1 >= request->iterations) < 0)
			return -1;
	return 0;
}

static int bench_target(const struct softrdma_config *config, enum ibv_qp_type type,
			int to_peer, int from_peer)
{
	struct bench_side side = { .to_peer = to_peer, .from_peer = from_peer };
	struct bench_request request;
	int ret = bench_side_open(&side, config, type);

	while (!ret) {
		ret = bench_read_all(from_peer, &request, sizeof(request));
		if (ret || !request.size)
			break;
		if (request.mode == BENCH_RATE)
			ret = bench_sink(&side, &request);
		else if (request.mode == BENCH_EXCHANGE)
			ret = bench_swap(&side, &request);
		else
			ret = bench_pong(&side, &request);
	}
	test_side_close(&side.end);
	return ret ? 1 : 0;
}

static void bench_header(const struct softrdma_config *config, struct bench_side *side)
{
	struct softrdma_profile_limits limits;

	softrdma_profile_limits(config->profile, &limits);
	printf("# softrdma_bench: profile %s, device %s, topology %s, %s QP, path MTU %d, "
	       "2 processes (fork), single copy by process_vm_writev, %s\n",
	       softrdma_profile_name(config->profile), side->end.device.context->device->name,
	       config->topology, side->end.qp->qp_type == IBV_QPT_RC ? "RC" : "UC",
	       limits.path_mtu_bytes, bench_buffer_pages());
}

/* Every table, or with floor_only only the floor's. */
static int bench_initiator(const struct softrdma_config *config, enum ibv_qp_type type,
			   bool floor_only, int to_peer, int from_peer)
{
	struct bench_side side = { .to_peer = to_peer, .from_peer = from_peer };
	struct bench_request done = { 0, 0, 0 };
	int ret = bench_side_open(&side, config, type);

	if (!ret)
		bench_header(config, &side);
	if (!ret && floor_only)
		ret = bench_floor(&side);
	else if (!ret)
		ret = bench_bandwidth(&side) || bench_tables(&side) ? -1 : 0;
	if (!ret)
		ret = bench_write_all(side.to_peer, &done, sizeof(done));
	test_side_close(&side.end);
	return ret;
}

/* Repeats of BENCH_MAX_SIZE bytes each process of --memcpy-processes or --write-processes moves. */
#define BENCH_PROCESS_ITERATIONS 16

/*
 * What a child of bench_processes does: sets up, says so on ready, waits
 * for the start byte on start, then returns the seconds its copies took
 * (negative if anything failed).
 */
typedef double (*bench_child)(const struct softrdma_config *config, int ready, int start);

/* Once set up: ready, then the start that every process gets at once. */
static int bench_child_start(int ready, int start)
{
	char go;

	return bench_write_all(ready, "r", 1) || bench_read_all(start, &go, 1) ? -1 : 0;
}

/*
 * Runs child in processes processes, started together once all are set up
 * (the setting up of one would otherwise overlap the others' copies); the
 * slowest one's seconds, or negative on failure.
 */
static double bench_processes(int processes, bench_child child, const struct softrdma_config *config)
{
	int ready[2], start[2], results[2], ret = 0;
	double slowest = 0;
	char byte;

	if (processes < 1 || pipe(ready) || pipe(start) || pipe(results))
		return bench_fail("starting processes", processes < 1 ? EINVAL : errno);
	for (int index = 0; index < processes; index++) {
		pid_t pid = fork();

		if (pid < 0)
			return bench_fail("fork", errno);
		if (pid == 0) {
			double seconds = child(config, ready[1], start[0]);

			_exit(bench_write_all(results[1], &seconds, sizeof(seconds)) ? 1 : 0);
		}
	}
	close(ready[1]);
	close(start[0]);
	close(results[1]);
	for (int index = 0; index < processes && !ret; index++)
		ret = bench_read_all(ready[0], &byte, 1);
	for (int index = 0; index < processes && !ret; index++)
		ret = bench_write_all(start[1], "g", 1);
	for (int index = 0; index < processes && !ret; index++) {
		double seconds;

		ret = bench_read_all(results[0], &seconds, sizeof(seconds));
		if (!ret && seconds <= 0)
			ret = bench_fail("a child's copies", EIO);
		if (!ret && seconds > slowest)
			slowest = seconds;
	}
	close(ready[0]);
	close(start[1]);
	close(results[0]);
	while (wait(NULL) > 0)
		;
	return ret ? -1 : slowest;
}

/* A child of --memcpy-processes: copies BENCH_MAX_SIZE bytes within itself. */
static double bench_memcpy_child(const struct softrdma_config *config, int ready, int start)
{
	char *source = bench_buffer_allocate(BENCH_MAX_SIZE);
	char *destination = bench_buffer_allocate(BENCH_MAX_SIZE);
	double seconds = -1;

	(void) config;
	if (source && destination) {
		memset(source, 1, BENCH_MAX_SIZE);
		memset(destination, 2, BENCH_MAX_SIZE);
		if (!bench_child_start(ready, start))
			seconds = bench_memcpy_time(destination, source, BENCH_MAX_SIZE,
						    BENCH_PROCESS_ITERATIONS);
	}
	free(destination);
	free(source);
	return seconds;
}

static enum ibv_qp_type bench_qp_type(const struct softrdma_config *config)
{
	return config->profile == SOFTRDMA_PROFILE_THUNDERBOLT ? IBV_QPT_UC : IBV_QPT_RC;
}

/*
 * Forks the target of a pair (bench_target), its side channel to_target
 * and from_target here; the target's pid, or -1.
 */
static pid_t bench_target_start(const struct softrdma_config *config, int *to_target,
				int *from_target)
{
	int down[2], up[2];
	pid_t target;

	if (pipe(down) || pipe(up))
		return bench_fail("pipe", errno);
	target = fork();
	if (target < 0)
		return bench_fail("fork", errno);
	if (target == 0)
		_exit(bench_target(config, bench_qp_type(config), up[1], down[0]));
	*to_target = down[1];
	*from_target = up[0];
	return target;
}

/* Closes the channel to the target, then waits for it: 0 if it ended well. */
static int bench_target_finish(pid_t target, int to_target)
{
	int status;

	close(to_target);
	if (waitpid(target, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return 0;
}

/*
 * A child of --write-processes: RDMA-writes BENCH_MAX_SIZE bytes into a
 * target process of its own on the device, as a collective's ranks write
 * into each other; the target only waits, as a NIC's host would.
 */
static double bench_write_child(const struct softrdma_config *config, int ready, int start)
{
	struct bench_request done = { 0, 0, 0 };
	struct bench_side side = { 0 };
	double seconds = -1;
	pid_t target = bench_target_start(config, &side.to_peer, &side.from_peer);

	if (target < 0)
		return -1;
	if (!bench_side_open(&side, config, bench_qp_type(config)) &&
	    !bench_child_start(ready, start) &&
	    bench_write_time(&side, BENCH_MAX_SIZE, BENCH_PROCESS_ITERATIONS, &seconds))
		seconds = -1;
	if (bench_write_all(side.to_peer, &done, sizeof(done)))
		seconds = -1;
	test_side_close(&side.end);
	if (bench_target_finish(target, side.to_peer))
		seconds = -1;
	return seconds;
}

/* --memcpy-processes N (write: false) or PROFILE --write-processes N (write: true). */
static int bench_processes_table(int processes, bool write, const struct softrdma_config *config)
{
	double slowest = bench_processes(processes, write ? bench_write_child : bench_memcpy_child,
					 config);

	if (slowest <= 0)
		return -1;
	printf("# %d processes %s %u MiB each at once (%s), %s, GB/s = 1e9 B/s\n", processes,
	       write ? "writing" : "copying", BENCH_MAX_SIZE >> 20,
	       write ? "RDMA writes through the device, into a process each" : "memcpy",
	       bench_buffer_pages());
	printf("%s %d in_all_GB/s %.2f\n", write ? "write_processes" : "memcpy_processes",
	       processes, (double) processes * BENCH_PROCESS_ITERATIONS * BENCH_MAX_SIZE / slowest / 1e9);
	return 0;
}

static int bench_usage(const char *program)
{
	fprintf(stderr, "usage: %s [thunderbolt|rocev2] [--floor | --write-processes N] | "
		"--memcpy-processes N\n", program);
	return -1;
}

/*
 * [PROFILE] [--floor | --write-processes N]: the profile, else $FI_BOLT_SOFT,
 * else rocev2; write_processes 0 unless asked.
 */
static int bench_config(int argc, char **argv, struct softrdma_config *config, bool *floor_only,
			int *write_processes)
{
	const char *profile = getenv("FI_BOLT_SOFT");

	*floor_only = false;
	*write_processes = 0;
	for (int index = 1; index < argc; index++) {
		if (!strcmp(argv[index], "--floor"))
			*floor_only = true;
		else if (!strcmp(argv[index], "--write-processes") && index + 1 < argc)
			*write_processes = atoi(argv[++index]);
		else if (index == 1)
			profile = argv[index];
		else
			return bench_usage(argv[0]);
	}
	memset(config, 0, sizeof(*config));
	if (softrdma_profile_parse(profile && *profile ? profile : "rocev2", &config->profile) ||
	    (*floor_only && *write_processes) || *write_processes < 0)
		return bench_usage(argv[0]);
	snprintf(config->topology, sizeof(config->topology), "single");
	snprintf(config->namespace_name, sizeof(config->namespace_name), "bench-%d",
		 (int) getpid());
	return 0;
}

int main(int argc, char **argv)
{
	struct softrdma_config config;
	int to_target, from_target, ret;
	int write_processes;
	bool floor_only;
	pid_t target;

	if (argc == 3 && !strcmp(argv[1], "--memcpy-processes"))
		return bench_processes_table(atoi(argv[2]), false, NULL) ? 1 : 0;
	if (bench_config(argc, argv, &config, &floor_only, &write_processes))
		return 2;
	if (write_processes)
		return bench_processes_table(write_processes, true, &config) ? 1 : 0;
	target = bench_target_start(&config, &to_target, &from_target);
	if (target < 0)
		return 1;
	ret = bench_initiator(&config, bench_qp_type(&config), floor_only, to_target, from_target);
	if (bench_target_finish(target, to_target))
		ret = -1;
	return ret ? 1 : 0;
}
