/*
 * softrdma_watch.c: whether another process has exited, zombies included,
 * told by a pidfd kept for each process watched: one poll, where a copy
 * costs a cross-memory attach that pins pages and checks ptrace rights. An
 * RC sender must see its target's death; a small SEND, whose data rides in
 * the receive completion, asks here instead of copying. A process whose
 * kernel has no pidfds (before Linux 5.3) copies as before.
 */
#define _GNU_SOURCE /* pidfd_open by syscall */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

/* Peers a process sends to at once; past it, the least recently opened is closed. */
#define SOFTRDMA_WATCH_SLOTS 64

struct softrdma_watch_entry {
	pid_t pid;      /* 0: free */
	int fd;
};

static struct {
	pthread_mutex_t lock;
	struct softrdma_watch_entry entries[SOFTRDMA_WATCH_SLOTS];
	unsigned int next;      /* the slot the next process opened takes */
	bool unsupported;       /* the kernel has no pidfds: never ask again */
} softrdma_watch = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void softrdma_watch_close(struct softrdma_watch_entry *entry)
{
	if (entry->pid)
		close(entry->fd);
	entry->pid = 0;
}

/* The entry watching pid, opened now if there is none; NULL with *error set if it cannot be. */
static struct softrdma_watch_entry *softrdma_watch_entry(pid_t pid, int *error)
{
	struct softrdma_watch_entry *entry;
	int fd;

	for (unsigned int index = 0; index < SOFTRDMA_WATCH_SLOTS; index++) {
		if (softrdma_watch.entries[index].pid == pid)
			return &softrdma_watch.entries[index];
	}
	fd = (int) syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) {
		*error = -errno;
		if (errno == ENOSYS || errno == EPERM)
			softrdma_watch.unsupported = true;
		return NULL;
	}
	entry = &softrdma_watch.entries[softrdma_watch.next];
	softrdma_watch.next = (softrdma_watch.next + 1) % SOFTRDMA_WATCH_SLOTS;
	softrdma_watch_close(entry);
	entry->pid = pid;
	entry->fd = fd;
	return entry;
}

int softrdma_watch_exited(pid_t pid)
{
	struct softrdma_watch_entry *entry;
	struct pollfd poll_fd;
	int ret = -ENOSYS;

	pthread_mutex_lock(&softrdma_watch.lock);
	if (softrdma_watch.unsupported)
		goto out;
	entry = softrdma_watch_entry(pid, &ret);
	if (!entry) {
		/* No such process: exited and reaped. */
		ret = ret == -ESRCH ? 1 : ret;
		goto out;
	}
	poll_fd = (struct pollfd) { .fd = entry->fd, .events = POLLIN };
	if (poll(&poll_fd, 1, 0) < 0) {
		ret = -errno;
		goto out;
	}
	ret = (poll_fd.revents & POLLIN) != 0;
	/* Its pid may come back as another process: that one gets a pidfd of its own. */
	if (ret)
		softrdma_watch_close(entry);
out:
	pthread_mutex_unlock(&softrdma_watch.lock);
	return ret;
}

static void softrdma_watch_close_entries(void)
{
	for (unsigned int index = 0; index < SOFTRDMA_WATCH_SLOTS; index++)
		softrdma_watch_close(&softrdma_watch.entries[index]);
	softrdma_watch.next = 0;
}

void softrdma_watch_close_all(void)
{
	pthread_mutex_lock(&softrdma_watch.lock);
	softrdma_watch_close_entries();
	pthread_mutex_unlock(&softrdma_watch.lock);
}

/* A child of fork: the lock may have been held by a thread it does not have. */
void softrdma_watch_forget(void)
{
	pthread_mutex_init(&softrdma_watch.lock, NULL);
	softrdma_watch_close_entries();
}
