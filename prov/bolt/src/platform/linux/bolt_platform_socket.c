/*
 * bolt_platform_socket.c (Linux): TCP liveness through the kernel's
 * keepalive probes and TCP_USER_TIMEOUT, which also times out keepalive
 * when set (tcp(7)), so one figure in milliseconds governs both an idle
 * peer and one that stopped acknowledging data.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "platform/bolt_platform.h"

/*
 * An idle socket is probed every second (the kernel's finest step): the
 * slack between silence and the verdict is one probe, whatever liveness_ms.
 * Probes never decide by count: TCP_USER_TIMEOUT does; the count only must
 * not come first.
 */
#define BOLT_PLATFORM_KEEPALIVE_INTERVAL_S 1
#define BOLT_PLATFORM_KEEPALIVE_COUNT 127

static int bolt_platform_set(int fd, int level, int name, int value)
{
	return setsockopt(fd, level, name, &value, sizeof(value)) ? -errno : 0;
}

int bolt_platform_socket_liveness(int fd, unsigned int liveness_ms)
{
	int ret;

	ret = bolt_platform_set(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	if (!ret)
		ret = bolt_platform_set(fd, IPPROTO_TCP, TCP_KEEPIDLE,
					BOLT_PLATFORM_KEEPALIVE_INTERVAL_S);
	if (!ret)
		ret = bolt_platform_set(fd, IPPROTO_TCP, TCP_KEEPINTVL,
					BOLT_PLATFORM_KEEPALIVE_INTERVAL_S);
	if (!ret)
		ret = bolt_platform_set(fd, IPPROTO_TCP, TCP_KEEPCNT, BOLT_PLATFORM_KEEPALIVE_COUNT);
	if (!ret)
		ret = bolt_platform_set(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (int) liveness_ms);
	return ret;
}
