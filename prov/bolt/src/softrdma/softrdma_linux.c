/*
 * softrdma_linux.c: what the software device asks of Linux itself: whether a
 * process runs and since when (/proc/<pid>/stat), which pid namespace this
 * process is in (pids mean something only there), and the files of
 * /dev/shm by path: opening without following links, publishing a file
 * under a name no one holds (rename without replace), removing a name only
 * while it is still the same file, listing names by prefix.
 */
#define _GNU_SOURCE /* renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"

#define SOFTRDMA_SHM_DIRECTORY "/dev/shm"

int softrdma_linux_process_start(pid_t pid, uint64_t *start_time)
{
	char path[64], status[1024], *end, state;
	unsigned long long start;
	ssize_t length;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		/* Gone, unless there is no /proc here at all. */
		return kill(pid, 0) && errno == ESRCH ? -ESRCH : -ENOENT;
	}
	if (fd < 0)
		return -errno;
	length = read(fd, status, sizeof(status) - 1);
	close(fd);
	if (length < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	status[length] = '\0';
	/*
	 * "pid (name) S ppid ... starttime ...": the name may hold anything, the
	 * state follows its last ')', and the start time (clock ticks after boot)
	 * is the 22nd field, the 20th after the name.
	 */
	end = strrchr(status, ')');
	if (!end || sscanf(end + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s"
			   " %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &state, &start) != 2)
		return -EPROTO;
	if (state == 'Z' || state == 'X')
		return -ESRCH;
	*start_time = start;
	return 0;
}

uint64_t softrdma_linux_pid_namespace(void)
{
	struct stat status;

	return stat("/proc/self/ns/pid", &status) ? 0 : (uint64_t) status.st_ino;
}

int softrdma_linux_shm_path(const char *name, char *path, size_t size)
{
	int length = snprintf(path, size, "%s/%s", SOFTRDMA_SHM_DIRECTORY,
			      name[0] == '/' ? name + 1 : name);

	return length < 0 || (size_t) length >= size ? -ENAMETOOLONG : 0;
}

int softrdma_linux_shm_open(const char *name, int flags)
{
	char path[PATH_MAX];
	int ret, fd;

	ret = softrdma_linux_shm_path(name, path, sizeof(path));
	if (ret)
		return ret;
	/* Never through a symbolic link, and never blocking on a FIFO someone put there. */
	fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

int softrdma_linux_shm_publish(const char *temporary, const char *name)
{
	char from[PATH_MAX], to[PATH_MAX];
	int ret;

	ret = softrdma_linux_shm_path(temporary, from, sizeof(from));
	if (!ret)
		ret = softrdma_linux_shm_path(name, to, sizeof(to));
	if (ret)
		return ret;
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) ? -errno : 0;
}

int softrdma_linux_shm_unlink(const char *name, const struct stat *identity)
{
	char path[PATH_MAX];
	struct stat status;
	int ret;

	ret = softrdma_linux_shm_path(name, path, sizeof(path));
	if (ret)
		return ret;
	if (lstat(path, &status))
		return -errno;
	/* Someone removed it by hand and another job made a new one: not ours to remove. */
	if (identity && (status.st_dev != identity->st_dev || status.st_ino != identity->st_ino))
		return -ESTALE;
	return unlink(path) ? -errno : 0;
}

int softrdma_linux_shm_list(const char *prefix, softrdma_linux_visit visit, void *argument)
{
	size_t prefix_length = strlen(prefix);
	struct dirent *entry;
	DIR *directory;

	if (prefix[0] != '/')
		return -EINVAL;
	directory = opendir(SOFTRDMA_SHM_DIRECTORY);
	if (!directory)
		return -errno;
	/* Names as shm_open takes them: "/" and the file's name. */
	while ((entry = readdir(directory))) {
		char name[NAME_MAX + 2];

		if (strncmp(entry->d_name, prefix + 1, prefix_length - 1))
			continue;
		snprintf(name, sizeof(name), "/%s", entry->d_name);
		visit(name, argument);
	}
	closedir(directory);
	return 0;
}
