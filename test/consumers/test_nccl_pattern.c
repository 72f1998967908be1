/*
 * test_nccl_pattern.c: bolt driven as aws-ofi-nccl's RDMA protocol drives a
 * provider, between two processes: its hint sets through fi_getinfo (the
 * GPUDirect set with FI_HMEM gets a clear no, the host-memory set an answer),
 * a data rail and a control rail (two endpoints of one domain, each with its
 * own CQ and AV, its fi_setopt calls made before fi_enable), the same buffer
 * registered, bound and enabled on each rail, more registrations than the
 * Thunderbolt device has memory regions, a control-mailbox fi_write,
 * fi_writedata with a 4-byte immediate and no receive posted for it, eager
 * fi_sendmsg of two entries into fi_recvmsg posted with FI_MORE, the flush (a
 * 64-byte fi_read from the endpoint's own address), and the teardown: memory
 * regions closed before endpoints.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "bolt_endpoint.h"
#include "bolt_getinfo.h"
#include "consumer_hints.h"
#include "rdm_fixture.h"

#define SHARED_BYTES (1 << 20)          /* the buffer registered on both rails */
#define MAILBOX_BYTES 4096              /* its first part: the control mailbox */
#define MAILBOX_MESSAGE_BYTES 64
#define WRITE_BYTES (256 * 1024)        /* written with immediate data after the mailbox */
#define EAGER_FIRST_BYTES 1000
#define EAGER_SECOND_BYTES 3000
#define EAGER_MESSAGES 2
#define FLUSH_BYTES 64
#define EXTRA_REGIONS 60                /* per rail: 120 with the rest, above 100 device MRs */
#define EXTRA_REGION_BYTES 256
#define IMMEDIATE 0xfeedf00dU           /* all 32 bits of the remote CQ data */

/* One process's side: a domain, its two rails, the shared buffer and its registrations. */
struct plugin {
	struct bolt_fixture_endpoint data_rail;  /* owns the domain */
	struct bolt_fixture_endpoint control_rail;
	fi_addr_t self;                 /* the data rail's own address, for the flush */
	char *shared;
	struct fid_mr *shared_on_data;
	struct fid_mr *shared_on_control;
	char *extra;                    /* EXTRA_REGIONS regions per rail, one block */
	struct fid_mr *extra_on_data[EXTRA_REGIONS];
	struct fid_mr *extra_on_control[EXTRA_REGIONS];
};

/* What the target tells the initiator: where to write, and with which keys. */
struct target_keys {
	uint64_t shared_address;
	uint64_t shared_data_key;
	uint64_t shared_control_key;
	uint64_t extra_address;
	uint64_t extra_data_keys[EXTRA_REGIONS];
	uint64_t extra_control_keys[EXTRA_REGIONS];
};

static struct rdm_options options = {
	.profile = "thunderbolt",
	.cq_format = FI_CQ_FORMAT_DATA,
	.av_type = FI_AV_TABLE,
};

/* The RDMA protocol's hints for host memory: the GPUDirect set less FI_HMEM. */
static struct fi_info *host_memory_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	consumer_hints_nccl_rdma(hints);
	hints->caps &= ~FI_HMEM;
	hints->domain_attr->mr_mode &= ~FI_MR_HMEM;
	return hints;
}

/* The plugin's options: its CUDA and shared-memory settings, before fi_enable. */
static int set_plugin_options(struct fid_ep *ep)
{
	bool permitted = false;
	int ret;

	ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, BOLT_OPT_CUDA_API_PERMITTED, &permitted,
			sizeof(permitted));
	if (!ret)
		ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, BOLT_OPT_SHARED_MEMORY_PERMITTED,
				&permitted, sizeof(permitted));
	return ret ? ret : fi_enable(ep);
}

/* Registered, bound to rail and enabled: FI_MR_ENDPOINT as the plugin does it. */
static int register_on(struct bolt_fixture_endpoint *rail, void *buffer, size_t length, uint64_t access,
		       struct fid_mr **mr)
{
	int ret = fi_mr_reg(rail->domain, buffer, length, access, 0, 0, 0, mr, NULL);

	if (ret)
		return ret;
	ret = fi_mr_bind(*mr, &rail->ep->fid, 0);
	return ret ? ret : fi_mr_enable(*mr);
}

static int plugin_register(struct plugin *plugin)
{
	const uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
				FI_REMOTE_WRITE;
	int ret;

	ret = register_on(&plugin->data_rail, plugin->shared, SHARED_BYTES, access,
			  &plugin->shared_on_data);
	if (!ret)
		ret = register_on(&plugin->control_rail, plugin->shared, SHARED_BYTES, access,
				  &plugin->shared_on_control);
	/* Block 2i on the data rail, block 2i + 1 on the control rail. */
	for (int i = 0; !ret && i < EXTRA_REGIONS; i++) {
		char *region = plugin->extra + (size_t) 2 * i * EXTRA_REGION_BYTES;

		ret = register_on(&plugin->data_rail, region, EXTRA_REGION_BYTES, access,
				  &plugin->extra_on_data[i]);
		if (!ret)
			ret = register_on(&plugin->control_rail, region + EXTRA_REGION_BYTES,
					  EXTRA_REGION_BYTES, access, &plugin->extra_on_control[i]);
	}
	return ret;
}

/* The domain, both rails connected to the peer's, the data rail to itself, and the registrations. */
static int plugin_open(struct plugin *plugin, int socket)
{
	struct fi_info *hints = host_memory_hints();
	char name[64];
	size_t length = sizeof(name);
	int ret;

	memset(plugin, 0, sizeof(*plugin));
	plugin->shared = aligned_alloc(4096, SHARED_BYTES);
	plugin->extra = calloc(2 * EXTRA_REGIONS, EXTRA_REGION_BYTES);
	if (!hints || !plugin->shared || !plugin->extra) {
		fi_freeinfo(hints);
		return -FI_ENOMEM;
	}
	memset(plugin->shared, 0, SHARED_BYTES);
	ret = rdm_open_domain(&plugin->data_rail, hints, NULL);
	fi_freeinfo(hints);
	if (!ret)
		ret = rdm_open_endpoint(&plugin->data_rail, &plugin->data_rail, &options);
	if (!ret)
		ret = rdm_open_endpoint(&plugin->control_rail, &plugin->data_rail, &options);
	if (!ret)
		ret = set_plugin_options(plugin->data_rail.ep);
	if (!ret)
		ret = set_plugin_options(plugin->control_rail.ep);
	if (!ret)
		ret = rdm_connect(&plugin->data_rail, socket);
	if (!ret)
		ret = rdm_connect(&plugin->control_rail, socket);
	if (!ret)
		ret = fi_getname(&plugin->data_rail.ep->fid, name, &length);
	if (!ret && fi_av_insert(plugin->data_rail.av, name, 1, &plugin->self, 0, NULL) != 1)
		ret = -FI_EINVAL;
	return ret ? ret : plugin_register(plugin);
}

/* Closes fid if there is one; the first error of a teardown is the one kept in *ret. */
static void close_keeping_error(struct fid *fid, int *ret)
{
	int closed = fid ? fi_close(fid) : 0;

	if (closed && !*ret)
		*ret = closed;
}

/*
 * Memory regions first: an endpoint with regions bound to it refuses to
 * close (-FI_EBUSY); once they are closed, the rails close, then the domain.
 */
static int plugin_close(struct plugin *plugin)
{
	int ret = 0;

	if (plugin->data_rail.ep && plugin->shared_on_data &&
	    fi_close(&plugin->data_rail.ep->fid) != -FI_EBUSY)
		ret = -FI_EOTHER;
	close_keeping_error(plugin->shared_on_data ? &plugin->shared_on_data->fid : NULL, &ret);
	close_keeping_error(plugin->shared_on_control ? &plugin->shared_on_control->fid : NULL,
			    &ret);
	for (int i = 0; i < EXTRA_REGIONS; i++) {
		close_keeping_error(plugin->extra_on_data[i] ? &plugin->extra_on_data[i]->fid : NULL,
				    &ret);
		close_keeping_error(plugin->extra_on_control[i] ?
				    &plugin->extra_on_control[i]->fid : NULL, &ret);
	}
	close_keeping_error(plugin->control_rail.ep ? &plugin->control_rail.ep->fid : NULL, &ret);
	plugin->control_rail.ep = NULL;
	close_keeping_error(plugin->data_rail.ep ? &plugin->data_rail.ep->fid : NULL, &ret);
	plugin->data_rail.ep = NULL;
	bolt_fixture_close(&plugin->control_rail);
	bolt_fixture_close(&plugin->data_rail);
	free(plugin->shared);
	free(plugin->extra);
	return ret;
}

/* The next completion on rail: 0, or the negative error of an error completion. */
static int wait_on(struct bolt_fixture_endpoint *rail, struct fi_cq_tagged_entry *entry)
{
	struct fi_cq_err_entry error;
	int ret = rdm_wait(rail, entry, &error);

	return ret == -FI_EAVAIL ? -error.err : ret;
}

static int send_keys(struct plugin *plugin, int socket)
{
	struct target_keys keys = {
		.shared_address = (uintptr_t) plugin->shared,
		.shared_data_key = fi_mr_key(plugin->shared_on_data),
		.shared_control_key = fi_mr_key(plugin->shared_on_control),
		.extra_address = (uintptr_t) plugin->extra,
	};
	const uint64_t *words = (const uint64_t *) &keys;

	for (int i = 0; i < EXTRA_REGIONS; i++) {
		keys.extra_data_keys[i] = fi_mr_key(plugin->extra_on_data[i]);
		keys.extra_control_keys[i] = fi_mr_key(plugin->extra_on_control[i]);
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(*words); i++)
		if (rdm_send_value(socket, words[i]))
			return -FI_EIO;
	return 0;
}

static int receive_keys(struct target_keys *keys, int socket)
{
	uint64_t *words = (uint64_t *) keys;

	for (size_t i = 0; i < sizeof(*keys) / sizeof(*words); i++)
		if (rdm_receive_value(socket, &words[i]))
			return -FI_EIO;
	return 0;
}

/* Receives posted as the plugin posts them: a batch with FI_MORE on all but the last. */
static int post_eager_receives(struct plugin *plugin, char *buffers)
{
	void *desc[2] = { fi_mr_desc(plugin->shared_on_data), fi_mr_desc(plugin->shared_on_data) };
	int ret = 0;

	for (int i = 0; !ret && i < EAGER_MESSAGES; i++) {
		char *base = buffers + i * (EAGER_FIRST_BYTES + EAGER_SECOND_BYTES);
		struct iovec iov[2] = {
			{ base, EAGER_FIRST_BYTES }, { base + EAGER_FIRST_BYTES, EAGER_SECOND_BYTES },
		};
		struct fi_msg message = {
			.msg_iov = iov, .desc = desc, .iov_count = 2, .addr = FI_ADDR_UNSPEC,
			.context = base,
		};

		ret = (int) fi_recvmsg(plugin->data_rail.ep, &message,
				       i + 1 < EAGER_MESSAGES ? FI_MORE : 0);
	}
	return ret;
}

/* The writedata's completion, with no receive posted, then both eager messages. */
static int wait_for_data(struct plugin *plugin, char *eager)
{
	struct fi_cq_tagged_entry entry;
	bool immediate_seen = false;
	int messages = 0;
	int ret;

	while (!immediate_seen || messages < EAGER_MESSAGES) {
		ret = wait_on(&plugin->data_rail, &entry);
		if (ret)
			return ret;
		if (entry.flags & FI_REMOTE_CQ_DATA && entry.flags & FI_REMOTE_WRITE) {
			if (entry.data != IMMEDIATE || entry.op_context || immediate_seen)
				return 2;
			immediate_seen = true;
			continue;
		}
		if (entry.op_context != eager + messages * (EAGER_FIRST_BYTES + EAGER_SECOND_BYTES) ||
		    entry.len != EAGER_FIRST_BYTES + EAGER_SECOND_BYTES || !(entry.flags & FI_RECV))
			return 3;
		messages++;
	}
	for (int i = 0; i < EAGER_MESSAGES; i++)
		if (!rdm_check(eager + i * (EAGER_FIRST_BYTES + EAGER_SECOND_BYTES),
			       EAGER_FIRST_BYTES + EAGER_SECOND_BYTES, 30 + (uint32_t) i))
			return 4;
	return 0;
}

/* The flush: 64 bytes read from its own address, through the data rail's key. */
static int flush(struct plugin *plugin, char *destination, const char *source)
{
	struct fi_cq_tagged_entry entry;
	int ret;

	ret = (int) fi_read(plugin->data_rail.ep, destination, FLUSH_BYTES,
			    fi_mr_desc(plugin->shared_on_data), plugin->self, (uintptr_t) source,
			    fi_mr_key(plugin->shared_on_data), destination);
	if (!ret)
		ret = wait_on(&plugin->data_rail, &entry);
	if (!ret && (entry.op_context != destination || memcmp(destination, source, FLUSH_BYTES)))
		ret = 5;
	return ret;
}

static int check_target_memory(const struct plugin *plugin)
{
	if (!rdm_check(plugin->shared, MAILBOX_MESSAGE_BYTES, 10))
		return 6;
	if (!rdm_check(plugin->shared + MAILBOX_BYTES, WRITE_BYTES, 20))
		return 7;
	for (int i = 0; i < 2 * EXTRA_REGIONS; i++)
		if (!rdm_check(plugin->extra + (size_t) i * EXTRA_REGION_BYTES, EXTRA_REGION_BYTES,
			       100 + (uint32_t) i))
			return 8;
	return 0;
}

/*
 * The target: tells its keys, takes the writedata and the eager messages,
 * flushes, serves the initiator until it is done, then checks every byte
 * the initiator wrote.
 */
static int target_peer(int socket, void *argument)
{
	struct plugin plugin;
	char *eager = NULL;
	uint64_t done;
	int ret;

	ret = plugin_open(&plugin, socket);
	if (!ret)
		eager = plugin.shared + SHARED_BYTES / 2;
	if (!ret)
		ret = post_eager_receives(&plugin, eager);
	if (!ret)
		ret = send_keys(&plugin, socket);
	if (!ret)
		ret = wait_for_data(&plugin, eager);
	if (!ret)
		ret = flush(&plugin, plugin.shared + SHARED_BYTES - FLUSH_BYTES, eager);
	if (!ret)
		ret = rdm_serve_until_told(&plugin.data_rail, socket, &done);
	if (!ret)
		ret = check_target_memory(&plugin);
	if (plugin_close(&plugin) && !ret)
		ret = 9;
	return ret;
}

static void expect_completion(struct bolt_fixture_endpoint *rail, void *context)
{
	struct fi_cq_tagged_entry entry;
	int ret = wait_on(rail, &entry);

	cr_assert_eq(ret, 0, "completion: %d", ret);
	cr_assert_eq(entry.op_context, context);
}

static void send_eager(struct plugin *plugin, fi_addr_t peer)
{
	void *desc[2] = { fi_mr_desc(plugin->shared_on_data), fi_mr_desc(plugin->shared_on_data) };
	void *other_rail_desc[2] = { fi_mr_desc(plugin->shared_on_control),
				     fi_mr_desc(plugin->shared_on_control) };

	for (int i = 0; i < EAGER_MESSAGES; i++) {
		char *base = plugin->shared + SHARED_BYTES / 2;
		struct iovec iov[2] = {
			{ base, EAGER_FIRST_BYTES }, { base + EAGER_FIRST_BYTES, EAGER_SECOND_BYTES },
		};
		struct fi_msg message = {
			.msg_iov = iov, .desc = desc, .iov_count = 2, .addr = peer, .context = base,
		};

		rdm_fill(base, EAGER_FIRST_BYTES + EAGER_SECOND_BYTES, 30 + (uint32_t) i);
		/*
		 * Local descriptors serve every endpoint of their domain (fabtests'
		 * fi_multi_ep relies on it): the first goes with the other rail's.
		 */
		if (i == 0)
			message.desc = other_rail_desc;
		cr_assert_eq(fi_sendmsg(plugin->data_rail.ep, &message, FI_COMPLETION), 0);
		expect_completion(&plugin->data_rail, base);
	}
}

/* Each extra region through the rail it is registered on. */
static void write_extra_regions(struct plugin *plugin, const struct target_keys *keys)
{
	char *source = plugin->shared + MAILBOX_BYTES + WRITE_BYTES;

	for (int i = 0; i < 2 * EXTRA_REGIONS; i++) {
		bool control = i % 2;
		struct bolt_fixture_endpoint *rail = control ? &plugin->control_rail : &plugin->data_rail;
		struct fid_mr *local = control ? plugin->shared_on_control : plugin->shared_on_data;
		uint64_t key = control ? keys->extra_control_keys[i / 2] : keys->extra_data_keys[i / 2];

		rdm_fill(source, EXTRA_REGION_BYTES, 100 + (uint32_t) i);
		cr_assert_eq(fi_write(rail->ep, source, EXTRA_REGION_BYTES, fi_mr_desc(local),
				      rail->peer, keys->extra_address + (uint64_t) i * EXTRA_REGION_BYTES,
				      key, source), 0, "region %d", i);
		expect_completion(rail, source);
	}
}

static void initiator(const char *tag)
{
	struct plugin plugin;
	struct target_keys keys;
	char *mailbox_message, *data;
	int socket;
	pid_t peer;

	rdm_environment(&options, tag);
	peer = rdm_fork(target_peer, NULL, &socket);
	cr_assert(peer > 0);
	cr_assert_eq(plugin_open(&plugin, socket), 0);
	cr_assert_eq(receive_keys(&keys, socket), 0);
	mailbox_message = plugin.shared;
	data = plugin.shared + MAILBOX_BYTES;

	/* The control message lands in the target's mailbox through the control rail. */
	rdm_fill(mailbox_message, MAILBOX_MESSAGE_BYTES, 10);
	cr_assert_eq(fi_write(plugin.control_rail.ep, mailbox_message, MAILBOX_MESSAGE_BYTES,
			      fi_mr_desc(plugin.shared_on_control), plugin.control_rail.peer,
			      keys.shared_address, keys.shared_control_key, mailbox_message), 0);
	expect_completion(&plugin.control_rail, mailbox_message);

	/* The data, with a 4-byte immediate the target gets with no receive posted. */
	rdm_fill(data, WRITE_BYTES, 20);
	cr_assert_eq(fi_writedata(plugin.data_rail.ep, data, WRITE_BYTES,
				  fi_mr_desc(plugin.shared_on_data), IMMEDIATE, plugin.data_rail.peer,
				  keys.shared_address + MAILBOX_BYTES, keys.shared_data_key, data), 0);
	expect_completion(&plugin.data_rail, data);

	send_eager(&plugin, plugin.data_rail.peer);
	write_extra_regions(&plugin, &keys);
	cr_assert_eq(rdm_send_value(socket, 1), 0);
	cr_assert_eq(bolt_fixture_process_status(peer), 0, "the target saw wrong data or completions");
	cr_assert_eq(plugin_close(&plugin), 0);
	rdm_environment_cleanup(&options);
	close(socket);
}

Test(nccl_pattern, rails_on_thunderbolt, .timeout = 120)
{
	options.profile = "thunderbolt";
	initiator("nccl-thunderbolt");
}

Test(nccl_pattern, rails_on_rocev2, .timeout = 120)
{
	options.profile = "rocev2";
	initiator("nccl-rocev2");
}

/* bolt_getinfo: FI_HMEM is a clear no; the host-memory set gets what the plugin needs. */
Test(nccl_pattern, hint_sets_answered)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_info *info = NULL;

	cr_assert_not_null(hints);
	rdm_environment(&options, "nccl-hints");
	consumer_hints_nccl_rdma(hints);
	cr_assert_eq(bolt_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	cr_assert_null(info);
	consumer_hints_nccl_sendrecv(hints);
	hints->caps |= FI_HMEM;
	cr_assert_eq(bolt_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	cr_assert_null(info);

	hints->caps &= ~FI_HMEM;
	cr_assert_eq(bolt_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, hints, &info), 0);
	cr_assert_eq(info->caps & (FI_TAGGED | FI_MSG | FI_HMEM), FI_TAGGED | FI_MSG);
	cr_assert_eq(info->mode & ~(uint64_t) (FI_CONTEXT | FI_CONTEXT2), 0);
	cr_assert_neq(info->ep_attr->mem_tag_format & (1ULL << 63), 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);

	hints = host_memory_hints();
	cr_assert_not_null(hints);
	cr_assert_eq(bolt_getinfo(FI_VERSION(1, 18), NULL, NULL, 0, hints, &info), 0);
	cr_assert_eq(info->caps & (FI_MSG | FI_RMA | FI_HMEM), FI_MSG | FI_RMA);
	cr_assert_neq(info->domain_attr->mr_mode & FI_MR_ENDPOINT, 0);
	cr_assert_eq(info->domain_attr->mr_mode & FI_MR_HMEM, 0);
	cr_assert_eq(info->domain_attr->threading, FI_THREAD_COMPLETION);
	cr_assert_geq(info->domain_attr->cq_data_size, 4);
	cr_assert_gt(info->domain_attr->mr_cnt, 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	rdm_environment_cleanup(&options);
}

/*
 * The same through libfabric, which loads bolt from FI_PROVIDER_PATH (the
 * build's .libs: tests run in the build directory), as the plugin finds it.
 */
Test(nccl_pattern, hint_sets_answered_through_libfabric)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_info *info = NULL;
	char path[4096];

	cr_assert_not_null(hints);
	cr_assert_not_null(getcwd(path, sizeof(path) - 8));
	strcat(path, "/.libs");
	setenv("FI_PROVIDER_PATH", path, 1);
	rdm_environment(&options, "nccl-libfabric");
	consumer_hints_nccl_rdma(hints);
	hints->fabric_attr->prov_name = strdup("bolt");
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	cr_assert_null(info);
	hints->caps &= ~FI_HMEM;
	hints->domain_attr->mr_mode &= ~FI_MR_HMEM;
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), 0);
	cr_assert_str_eq(info->fabric_attr->prov_name, "bolt");
	cr_assert_eq(info->caps & FI_HMEM, 0);
	cr_assert_neq(info->domain_attr->mr_mode & FI_MR_ENDPOINT, 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	rdm_environment_cleanup(&options);
}
