#!/bin/sh
# hosts_rank.sh PROGRAM [ARGUMENT...]: one MPI rank in a guest of hosts_run.sh:
# bolt's side channel on this guest's own address (mpirun's -x would give
# every rank host 0's), which check_hosts.sh leaves in the guest's control
# directory, then PROGRAM.
FI_BOLT_SIDE_CHANNEL_ADDRESS=$(cat /bolt-rxe/side_channel_address) || exit 1
export FI_BOLT_SIDE_CHANNEL_ADDRESS
exec "$@"
