/*
 * test_softrdma_segment.c: the segment's file. It is joined only when it is
 * this user's alone (mode 0600, one link): anything else under its name is
 * refused at once, with an error naming the file. And it goes when its job
 * ends, however the job ends: its processes close, exit holding their
 * objects, or are killed (then the next process that attaches removes it),
 * and so does a segment a killed creator was still building. The jobs are
 * processes of softrdma_member, started here.
 */
#define _GNU_SOURCE /* pipe2 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "softrdma/softrdma_internal.h"
#include "softrdma_test.h"

/* Bounds a refusal: a joiner that waited for a creator would take 10 s. */
#define REFUSAL_TIMEOUT_S 8
#define JOB_MEMBERS 3

static struct softrdma_config config;

/* The segment's file: the software device is Linux's, its segments in /dev/shm. */
static void segment_path(const struct softrdma_config *of, char *path, size_t size)
{
	char name[160];

	cr_assert_eq(softrdma_segment_name(of, name, sizeof(name)), 0);
	snprintf(path, size, "/dev/shm%s", name);
}

static bool segment_exists(const struct softrdma_config *of)
{
	char path[PATH_MAX];
	struct stat status;

	segment_path(of, path, sizeof(path));
	return !lstat(path, &status);
}

/* Entries of /dev/shm for the segment of of: itself, or one in creation ("<name>~..."). */
static int segment_files(const struct softrdma_config *of)
{
	char name[160];
	struct dirent *entry;
	size_t length;
	DIR *directory;
	int count = 0;

	cr_assert_eq(softrdma_segment_name(of, name, sizeof(name)), 0);
	length = strlen(name + 1);
	directory = opendir("/dev/shm");
	cr_assert_not_null(directory);
	while ((entry = readdir(directory))) {
		if (!strncmp(entry->d_name, name + 1, length) &&
		    (!entry->d_name[length] || entry->d_name[length] == '~'))
			count++;
	}
	closedir(directory);
	return count;
}

/* A file under the segment's name that the device did not make. */
static void squat(const struct softrdma_config *of, mode_t mode, uid_t owner)
{
	char path[PATH_MAX];
	int fd;

	segment_path(of, path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "creating %s: %s", path, strerror(errno));
	cr_assert_eq(fchmod(fd, mode), 0);
	if (owner != geteuid())
		cr_assert_eq(fchown(fd, owner, (gid_t) owner), 0);
	close(fd);
}

static void squat_remove(const struct softrdma_config *of)
{
	char path[PATH_MAX];

	segment_path(of, path, sizeof(path));
	cr_assert_eq(unlink(path), 0, "the squatted file was left alone");
}

/* softrdma_member, next to this test program. */
static void member_path(char *path, size_t size)
{
	char self[PATH_MAX];
	ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);

	cr_assert_gt(length, 0);
	self[length] = '\0';
	snprintf(path, size, "%s/softrdma_member", dirname(self));
}

struct member {
	pid_t pid;
	int ready;              /* its standard output: one byte once it holds its objects */
	int go;                 /* its standard input: closing it ends the member */
};

/* A member of the job in namespace of config, ending as end says; its stderr to error_fd. */
static void member_start(struct member *member, const char *end, int error_fd)
{
	char path[PATH_MAX];
	int ready[2], go[2];

	member_path(path, sizeof(path));
	/* Close on exec: a member holding another's go pipe would keep that one waiting. */
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	member->pid = fork();
	cr_assert_geq(member->pid, 0);
	if (!member->pid) {
		if (dup2(go[0], STDIN_FILENO) < 0 || dup2(ready[1], STDOUT_FILENO) < 0 ||
		    (error_fd >= 0 && dup2(error_fd, STDERR_FILENO) < 0))
			_exit(126);
		close(go[1]);
		close(ready[0]);
		execl(path, path, softrdma_profile_name(config.profile), config.namespace_name,
		      end, (char *) NULL);
		_exit(127);
	}
	close(go[0]);
	close(ready[1]);
	member->ready = ready[0];
	member->go = go[1];
}

static void member_wait_ready(struct member *member)
{
	char byte;

	cr_assert_eq(test_read_all(member->ready, &byte, 1, TEST_TIMEOUT_MS), 0,
		     "member %d did not get ready", (int) member->pid);
}

/* Ends the member and waits for it: its exit status, -1 if a signal ended it. */
static int member_end(struct member *member)
{
	close(member->go);
	close(member->ready);
	return test_wait(member->pid);
}

/* A job of JOB_MEMBERS processes, all attached at once, each ending as end says. */
static void job_run(const char *end, int expected_status)
{
	struct member members[JOB_MEMBERS];

	for (int index = 0; index < JOB_MEMBERS; index++)
		member_start(&members[index], end, -1);
	for (int index = 0; index < JOB_MEMBERS; index++)
		member_wait_ready(&members[index]);
	cr_assert(segment_exists(&config));
	for (int index = 0; index < JOB_MEMBERS; index++)
		cr_assert_eq(member_end(&members[index]), expected_status);
}

/* Until the writer is gone (a reader that stops early would kill it with SIGPIPE): the last lines. */
static void log_read(int fd, char *log, size_t size)
{
	size_t used = 0;
	ssize_t length;

	while ((length = read(fd, log + used, size - 1 - used)) > 0) {
		used += (size_t) length;
		if (used == size - 1) {
			memmove(log, log + size / 2, used - size / 2);
			used -= size / 2;
		}
	}
	log[used] = '\0';
}

Test(segment, a_segment_others_can_reach_is_refused_naming_the_file,
     .timeout = REFUSAL_TIMEOUT_S)
{
	char path[PATH_MAX], log[4096] = "";
	struct member member;
	int error[2], status;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "open-mode");
	squat(&config, 0666, geteuid());
	segment_path(&config, path, sizeof(path));
	cr_assert_eq(pipe2(error, O_CLOEXEC), 0);
	setenv("FI_LOG_LEVEL", "warn", 1);
	member_start(&member, "attach", error[1]);
	unsetenv("FI_LOG_LEVEL");
	close(error[1]);
	log_read(error[0], log, sizeof(log));
	close(error[0]);
	status = member_end(&member);
	cr_assert_eq(status, EACCES, "status %d, log:\n%s", status, log);
	cr_assert_not_null(strstr(log, path), "the error does not name %s:\n%s", path, log);
	cr_assert_not_null(strstr(log, "mode"), "the error does not say why:\n%s", log);
	cr_assert_eq(softrdma_attach(&config), -EACCES);
	squat_remove(&config);
}

static int attach_errno(void *argument)
{
	return -softrdma_attach(argument);
}

/* Another user links its own segment under the victim's name: two links. */
Test(segment, a_segment_with_another_name_is_refused, .timeout = REFUSAL_TIMEOUT_S)
{
	struct softrdma_config victim;
	char source[PATH_MAX], target[PATH_MAX];

	test_config_init(&victim, SOFTRDMA_PROFILE_ROCEV2, "single", "linked");
	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "linked-source");
	cr_assert_eq(softrdma_attach(&config), 0);
	segment_path(&config, source, sizeof(source));
	segment_path(&victim, target, sizeof(target));
	cr_assert_eq(link(source, target), 0);
	cr_assert_eq(test_wait(test_fork(attach_errno, &victim)), EACCES);
	cr_assert_eq(unlink(target), 0);
	softrdma_detach();
	cr_assert_not(segment_exists(&config));
}

Test(segment, a_symbolic_link_is_refused, .timeout = REFUSAL_TIMEOUT_S)
{
	struct softrdma_config other;
	char source[PATH_MAX], target[PATH_MAX];

	test_config_init(&other, SOFTRDMA_PROFILE_ROCEV2, "single", "symlink-source");
	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "symlink");
	segment_path(&other, source, sizeof(source));
	segment_path(&config, target, sizeof(target));
	cr_assert_eq(symlink(source, target), 0);
	cr_assert_eq(softrdma_attach(&config), -EACCES);
	cr_assert_eq(unlink(target), 0);
}

Test(segment, a_segment_of_another_user_is_refused, .timeout = REFUSAL_TIMEOUT_S)
{
	if (geteuid() != 0)
		cr_skip_test("only root can give a file to another user");
	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "owner");
	squat(&config, 0600, 65534);
	cr_assert_eq(softrdma_attach(&config), -EACCES);
	squat_remove(&config);
}

/* Not a segment of this bolt, and no creator of this bolt ever leaves one: no waiting. */
Test(segment, an_empty_file_is_refused_at_once, .timeout = REFUSAL_TIMEOUT_S)
{
	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "empty");
	squat(&config, 0600, geteuid());
	cr_assert_eq(softrdma_attach(&config), -EPROTO);
	squat_remove(&config);
}

/* Attaches and leaves again and again, as fi_getinfo's probes do; the errno of the first failure. */
static int attach_and_leave_repeatedly(void *argument)
{
	for (int round = 0; round < 2000; round++) {
		int ret = softrdma_attach(argument);

		if (ret)
			return -ret;
		softrdma_detach();
	}
	return 0;
}

/*
 * A joiner may open the segment just before its last process removes it: the
 * file it holds has no link, and it starts over instead of refusing it.
 */
Test(segment, a_segment_removed_while_being_joined_is_joined_again)
{
	pid_t members[2];

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "churn");
	for (int index = 0; index < 2; index++)
		members[index] = test_fork(attach_and_leave_repeatedly, &config);
	for (int index = 0; index < 2; index++)
		cr_assert_eq(test_wait(members[index]), 0, "member %d failed to attach", index);
	cr_assert_eq(segment_files(&config), 0);
}

Test(segment, a_job_that_closes_leaves_nothing)
{
	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "job-close");
	job_run("close", 0);
	cr_assert_eq(segment_files(&config), 0);
}

Test(segment, a_job_that_exits_without_closing_leaves_nothing)
{
	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "job-exit");
	job_run("exit", 0);
	cr_assert_eq(segment_files(&config), 0);
}

Test(segment, a_killed_job_leaves_a_segment_the_next_attach_removes)
{
	struct softrdma_config next;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "job-kill");
	job_run("kill", -1);
	test_config_init(&next, SOFTRDMA_PROFILE_ROCEV2, "single", "job-next");
	cr_assert_eq(softrdma_attach(&next), 0);
	cr_assert_eq(segment_files(&config), 0, "the killed job's segment stayed");
	softrdma_detach();
	cr_assert_eq(segment_files(&next), 0);
}

/* Its table still holds the killed member: the last to close must see it is dead. */
Test(segment, the_last_to_close_removes_a_segment_a_killed_member_was_in)
{
	struct member killed, closing[2];

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "job-mixed");
	member_start(&killed, "kill", -1);
	for (int index = 0; index < 2; index++)
		member_start(&closing[index], "close", -1);
	member_wait_ready(&killed);
	for (int index = 0; index < 2; index++)
		member_wait_ready(&closing[index]);
	cr_assert_eq(member_end(&killed), -1);
	for (int index = 0; index < 2; index++)
		cr_assert_eq(member_end(&closing[index]), 0);
	cr_assert_eq(segment_files(&config), 0);
}

static int exit_at_once(void *argument)
{
	(void) argument;
	return 0;
}

/* A creator killed while it built the segment under its creation name. */
Test(segment, a_segment_a_dead_creator_was_building_is_removed)
{
	char name[160], dead[192], live[192], path[PATH_MAX];
	struct softrdma_config next;
	uint64_t start_time;
	pid_t gone;
	int fd;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "creation");
	cr_assert_eq(softrdma_segment_name(&config, name, sizeof(name)), 0);
	gone = test_fork(exit_at_once, NULL);
	cr_assert_eq(test_wait(gone), 0);
	cr_assert_eq(softrdma_linux_process_start(getpid(), &start_time), 0);
	cr_assert_eq(softrdma_segment_creation_name(name, gone, 1, dead, sizeof(dead)), 0);
	cr_assert_eq(softrdma_segment_creation_name(name, getpid(), start_time, live,
						    sizeof(live)), 0);
	for (int index = 0; index < 2; index++) {
		snprintf(path, sizeof(path), "/dev/shm%s", index ? live : dead);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
		cr_assert_geq(fd, 0);
		close(fd);
	}
	test_config_init(&next, SOFTRDMA_PROFILE_ROCEV2, "single", "creation-next");
	cr_assert_eq(softrdma_attach(&next), 0);
	softrdma_detach();
	cr_assert_eq(segment_files(&config), 1, "one of the two creation files should stay");
	cr_assert_eq(shm_unlink(live), 0, "the live creator's file went");
}

Test(segment, a_reused_pid_is_not_its_former_process)
{
	uint64_t start_time;
	pid_t gone;

	cr_assert_eq(softrdma_linux_process_start(getpid(), &start_time), 0);
	cr_assert(softrdma_process_running_since(getpid(), start_time));
	cr_assert(softrdma_process_running_since(getpid(), 0));
	cr_assert_not(softrdma_process_running_since(getpid(), start_time + 1));
	gone = test_fork(exit_at_once, NULL);
	cr_assert_eq(test_wait(gone), 0);
	cr_assert_not(softrdma_process_running_since(gone, 0));
}
