#!/bin/sh
# hosts_rsh.sh HOST COMMAND...: Open MPI's launcher agent between the virtual
# machines of hosts_run.sh, in place of ssh (mpirun --mca plm_rsh_agent): runs
# the shell command COMMAND (mpirun's orted) in guest hostN by leaving it as a
# job in that guest's control directory, which every guest sees under
# BOLT_HOSTS_WORK, and waits for it; its output and exit status are the job's.
set -u
host=${1:?usage: hosts_rsh.sh HOST COMMAND...}
shift
case "$host" in
host[0-9]*) guest=${host#host} ;;
*) echo "hosts_rsh.sh: $host is no host of hosts_run.sh" >&2; exit 255 ;;
esac
jobs=${BOLT_HOSTS_WORK:?hosts_rsh.sh runs in a guest of hosts_run.sh}/guest$guest/jobs
[ -d "$jobs" ] || { echo "hosts_rsh.sh: no guest $guest" >&2; exit 255; }
job=rsh-$(hostname)-$$
printf '%s\n' "$*" >"$jobs/$job.tmp"
mv "$jobs/$job.tmp" "$jobs/$job.command"
while [ ! -s "$jobs/$job.status" ]; do
	sleep 0.1
done
cat "$jobs/$job.output"
exit "$(cat "$jobs/$job.status")"
