/*
 * softrdma_segment.h: the functions that find, join, share out and clean
 * up the shared segment whose layout softrdma_layout.h fixes: the topology
 * of its devices, its tables, its process table and the Linux calls that
 * tell which processes live (softrdma_topology.c, softrdma_table.c,
 * softrdma_linux.c, softrdma_segment.c, softrdma_processes.c,
 * softrdma_sweep.c).
 */
#ifndef SOFTRDMA_SEGMENT_H
#define SOFTRDMA_SEGMENT_H

#include "softrdma/softrdma_layout.h"

/* Gives back what process pid held in the segment (softrdma_reap.c). */
typedef void (*softrdma_owner_release)(struct softrdma_segment *segment, pid_t pid);

/* ---- softrdma_topology.c ---- */
int softrdma_topology_parse(const char *text, int *hosts, int *cables);
void softrdma_topology_build(struct softrdma_segment *segment);
int softrdma_device_id(const struct softrdma_segment *segment, int host, int index);
void softrdma_device_gid(const struct softrdma_segment *segment, int device_id, int gid_index,
			 union ibv_gid *gid);
int softrdma_device_gid_type(const struct softrdma_segment *segment, int gid_index,
			     enum ibv_gid_type *type);
int softrdma_device_find_gid(const struct softrdma_segment *segment, const union ibv_gid *gid);
bool softrdma_port_active(const struct softrdma_segment *segment, int device_id);
bool softrdma_device_reachable(const struct softrdma_segment *segment, int from, int to);

/* ---- softrdma_table.c ---- */
void softrdma_table_init(struct softrdma_table *table, uint64_t offset, uint32_t stride,
			 uint32_t zeroed_bytes, uint32_t index_bits, uint32_t handle_bits);
void softrdma_table_reset(struct softrdma_table *table);
int softrdma_table_alloc(struct softrdma_segment *segment, struct softrdma_table *table,
			 pid_t owner);
void softrdma_table_free(struct softrdma_segment *segment, struct softrdma_table *table,
			 uint32_t index);
void *softrdma_table_slot(struct softrdma_segment *segment, const struct softrdma_table *table,
			  uint32_t index);
uint32_t softrdma_table_handle(const struct softrdma_table *table, const struct softrdma_slot *slot,
			       uint32_t index);
void *softrdma_table_lookup(struct softrdma_segment *segment, const struct softrdma_table *table,
			    uint32_t handle);

/* ---- softrdma_linux.c ---- */
/* 0 and its start time if pid runs; -ESRCH if it exited (zombies too); else it cannot tell. */
int softrdma_linux_process_start(pid_t pid, uint64_t *start_time);
/* The inode number of this process's pid namespace; 0 if unknown. */
uint64_t softrdma_linux_pid_namespace(void);
/* The file of shared-memory object name ("/bolt-..."): 0 or -ENAMETOOLONG. */
int softrdma_linux_shm_path(const char *name, char *path, size_t size);
/* An fd of shared-memory object name, never through a symbolic link; or -errno. */
int softrdma_linux_shm_open(const char *name, int flags);
/* Renames temporary to name, atomically, unless name exists (-EEXIST). */
int softrdma_linux_shm_publish(const char *temporary, const char *name);
/* Removes name if it is still the file identity describes (else -ESTALE); NULL: any. */
int softrdma_linux_shm_unlink(const char *name, const struct stat *identity);
typedef void (*softrdma_linux_visit)(const char *name, void *argument);
/* Calls visit with every shared-memory object whose name ("/...") starts with prefix. */
int softrdma_linux_shm_list(const char *prefix, softrdma_linux_visit visit, void *argument);

/* ---- softrdma_segment.c ---- */
/* A robust, process-shared mutex (the segment's lock, a process's anchor); 0 or an errno. */
int softrdma_shared_mutex_init(pthread_mutex_t *mutex);
/*
 * The mutex's word, read only: glibc keeps its owner's thread id there, and
 * the kernel FUTEX_OWNER_DIED once that owner died; 0 with other libraries.
 */
uint32_t softrdma_shared_mutex_word(pthread_mutex_t *mutex);
void softrdma_lock(struct softrdma_segment *segment);
/* The lock if it is free (or its holder died), without waiting: true if taken. */
bool softrdma_trylock(struct softrdma_segment *segment);
void softrdma_unlock(struct softrdma_segment *segment);
int softrdma_segment_prefix(char *prefix, size_t size);
/* A segment in creation is built under "<name>~<pid>-<start time>" of its creator. */
int softrdma_segment_creation_name(const char *name, pid_t pid, uint64_t start_time,
				   char *creation, size_t size);
bool softrdma_segment_creation_parse(const char *creation, pid_t *pid, uint64_t *start_time);
/*
 * Creates or joins the config's segment and registers this process in it.
 * It joins only a file of this user's, of mode 0600 and one link (else
 * -EACCES, logged with the file's path). release_owner_locked gives back
 * what a dead or detaching process held.
 */
int softrdma_segment_open(const struct softrdma_config *config, int hosts, int cables,
			  softrdma_owner_release release_owner_locked);
/* Gives back what this process held; the last process out removes the segment's name. */
void softrdma_segment_leave(void);
/* Leaves, and unmaps the segment. */
void softrdma_segment_close(void);
/* Removes segment name if it is this user's and its processes are all gone. */
void softrdma_segment_remove_if_abandoned(const char *name);

/* ---- softrdma_processes.c ---- */
bool softrdma_process_exists(pid_t pid);
bool softrdma_process_alive(pid_t pid);
/*
 * Whether pid still runs as the process that started at start_time (0:
 * any); true also when this cannot be told.
 */
bool softrdma_process_running_since(pid_t pid, uint64_t start_time);
int softrdma_process_slot_locked(const struct softrdma_segment *segment, pid_t pid);
void softrdma_process_forget_locked(struct softrdma_segment *segment, pid_t pid);
/*
 * Has what dead processes held freed, through the release function handed
 * to softrdma_segment_open, as the kernel does when a process exits: a
 * device full of QPs, MRs or channels may be full of the dead.
 */
void softrdma_reap_dead_locked(struct softrdma_segment *segment);
/* Whether a device's count of QPs or MRs is at limit even once the dead are reaped. */
bool softrdma_device_full_locked(struct softrdma_segment *segment, const int32_t *count, int limit);
/* No process in the table runs any more (a pid reused since does not count). */
bool softrdma_processes_all_gone_locked(const struct softrdma_segment *segment);
/* Enters this process in the table: its slot, or -EUSERS. */
int softrdma_process_register_locked(struct softrdma_segment *segment);

/* ---- softrdma_sweep.c ---- */
/*
 * Removes what jobs of this user left in /dev/shm: segments whose processes
 * are all gone, and segments in creation whose creator is.
 */
void softrdma_sweep(void);

#endif /* SOFTRDMA_SEGMENT_H */
