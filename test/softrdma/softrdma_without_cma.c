/*
 * softrdma_without_cma.c: runs a program where cross-memory attach is
 * forbidden, as a container's seccomp filter forbids it: process_vm_readv
 * and process_vm_writev fail with EPERM. The software device's copy mode
 * auto then moves data through shared memory, so for instance
 * "softrdma_without_cma util/softrdma_bench" measures copy mode shm.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "softrdma_test.h"

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: %s program [argument...]\n", argv[0]);
		return 2;
	}
	ret = test_forbid_cma();
	if (ret) {
		fprintf(stderr, "%s: installing the seccomp filter failed: %s\n", argv[0],
			strerror(ret));
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "%s: running %s failed: %s\n", argv[0], argv[1], strerror(errno));
	return 127;
}
