/*
 * bolt_peer_host.h: a program's two sides on two hosts. The tests and
 * benchmarks start their peer by fork on one host; test/hosts runs the same
 * program on two virtual machines instead, with BOLT_TEST_PEER_ROLE=test on
 * one (the side that prints and judges) and BOLT_TEST_PEER_ROLE=peer on the
 * other (the side a fork would have run), and BOLT_TEST_PEER_HOST naming the
 * test side's address (IPv4, or IPv6 with its interface: fe80::1%eth0). The
 * two meet over TCP on BOLT_TEST_PEER_PORT (default 7471): the test side
 * listens, the peer connects, and each connection starts with a tag that both
 * sides must agree on (the test's name), so a test never talks to another's
 * peer.
 */
#ifndef BOLT_PEER_HOST_H
#define BOLT_PEER_HOST_H

enum bolt_peer_host_role {
	BOLT_PEER_HOST_NONE,    /* one host: the peer is forked */
	BOLT_PEER_HOST_TEST,    /* this host runs the test's side */
	BOLT_PEER_HOST_PEER,    /* this host runs the peer's side */
};

/* The role the environment gives; -1 (after a message) where it names none that exists. */
int bolt_peer_host_role(void);

/*
 * One connection to the other host's side, for the tag both give: the
 * connected socket, or a negative error code (-FI_ETIMEDOUT when the other
 * side did not come within timeout_ms, -FI_EOTHER when it gave another tag).
 */
int bolt_peer_host_connect(const char *tag, int timeout_ms);

#endif /* BOLT_PEER_HOST_H */
