#!/bin/sh
# run_fabtests.sh: libfabric's fabtests (runfabtests.sh of an installed
# fabtests) against bolt on the software device, server and client on
# loopback, on each profile asked for, with bolt's exclude file.
#
#   fabtests-config/run_fabtests.sh [options] FABTESTS_PREFIX [-- runfabtests.sh options]
#
#   FABTESTS_PREFIX  where fabtests is installed (holds bin/runfabtests.sh)
#   -b DIRECTORY     where libbolt-fi.so is (default: $FI_PROVIDER_PATH, else
#                    build/.libs of this tree)
#   -P PROFILES      software device profiles, comma separated
#                    (default: thunderbolt,rocev2)
#   -B PORT          the port servers listen on (default: one from this
#                    runner's process id, so that runs side by side do not
#                    meet on fabtests' fixed default, 9228)
#   -t SET           runfabtests.sh test set (default: quick)
#   -T SECONDS       time limit of each test process (default: 60)
#   -v               print the output of failing tests
#
# runfabtests.sh's cleanup runs `ps -eo comm,pid | grep '^fi_' | xargs kill -9`,
# which would kill every fi_* process of the machine, other users' jobs
# included. This runner starts runfabtests.sh in a session of its own and puts
# first in its PATH a `ps` that, asked for exactly `-eo comm,pid`, lists only
# the processes of that session; any other use goes to the real ps.
#
# runfabtests.sh (1.17) runs each test as `timeout N export VAR=...; ...; fi_x`
# when given -E: timeout swallows the first export and the test runs without a
# time limit. So the runner also exports the variables itself, and points
# runfabtests.sh at a directory of wrappers that run each fabtests program
# under timeout.
# The exit status is the number of failed tests over all profiles (at most 125).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
exclude_file="$here/bolt.exclude"
provider_path=${FI_PROVIDER_PATH:-$top/build/.libs}
profiles=thunderbolt,rocev2
test_set=quick
time_limit=60
verbose=""
port=$((10000 + $$ % 10000))

usage() {
	sed -n '5,19p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while getopts b:B:P:t:T:vh option; do
	case $option in
	b) provider_path=$OPTARG ;;
	B) port=$OPTARG ;;
	P) profiles=$OPTARG ;;
	t) test_set=$OPTARG ;;
	T) time_limit=$OPTARG ;;
	v) verbose=-v ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
fabtests_bin=$(cd "$1/bin" 2>/dev/null && pwd) || {
	echo "run_fabtests.sh: no $1/bin" >&2
	exit 2
}
shift
[ "${1:-}" = "--" ] && shift
if [ ! -x "$fabtests_bin/runfabtests.sh" ]; then
	echo "run_fabtests.sh: no runfabtests.sh in $fabtests_bin" >&2
	exit 2
fi
provider_path=$(cd "$provider_path" 2>/dev/null && pwd) || {
	echo "run_fabtests.sh: no provider directory $provider_path" >&2
	exit 2
}
if [ ! -f "$provider_path/libbolt-fi.so" ]; then
	echo "run_fabtests.sh: no libbolt-fi.so in $provider_path (build bolt, or use -b)" >&2
	exit 2
fi
for tool in setsid setpriv timeout; do
	command -v $tool >/dev/null || { echo "run_fabtests.sh: needs $tool" >&2; exit 2; }
done
real_ps=$(command -v ps) || { echo "run_fabtests.sh: needs ps (procps)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bolt-fabtests.XXXXXX") || exit 2
mkdir "$work/shim"
# The shim's own session is the one setsid gave runfabtests.sh: timeout and the
# tests it starts change process group, never session.
cat >"$work/shim/ps" <<EOF
#!/bin/sh
if [ "\$*" = "-eo comm,pid" ]; then
	session=\$("$real_ps" -o sid= -p \$\$ | tr -d ' ')
	exec "$real_ps" -o comm,pid --sid "\$session"
fi
exec "$real_ps" "\$@"
EOF
chmod +x "$work/shim/ps"

# One wrapper per program of the install, under the same name. When a client
# fails, runfabtests.sh kills the shell it started its server from, which
# leaves the server holding the port for the tests that follow: timeout and the
# program die with their parent (setpriv --pdeathsig).
mkdir "$work/bin"
run="exec setpriv --pdeathsig KILL timeout -k 5 $time_limit setpriv --pdeathsig KILL"
for program in "$fabtests_bin"/*; do
	[ -f "$program" ] && [ -x "$program" ] || continue
	printf '#!/bin/sh\n%s "%s" "$@"\n' "$run" "$program" >"$work/bin/${program##*/}"
	chmod +x "$work/bin/${program##*/}"
done

namespaces=""
session=""
# An interrupted run ends its own session's processes only; the tests die with
# their parents.
stop() {
	[ -n "$session" ] && kill -TERM -"$session" 2>/dev/null
	exit 130
}
finish() {
	for namespace in $namespaces; do
		rm -f /dev/shm/bolt-softrdma-"$(id -u)"-*-"$namespace"
	done
	rm -rf "$work"
}
trap finish EXIT
trap stop INT TERM

failures=0
for profile in $(echo "$profiles" | tr ',' ' '); do
	case $profile in
	thunderbolt | rocev2) ;;
	*) echo "run_fabtests.sh: unknown profile $profile" >&2; exit 2 ;;
	esac
	namespace="fabtests-$$-$profile"
	namespaces="$namespaces $namespace"
	echo "# bolt fabtests: profile $profile, set $test_set, provider $provider_path"
	# A background job of this script leads no process group, so setsid needs
	# no fork: the job's process id is the session's.
	(cd "$work" && export FI_PROVIDER_PATH="$provider_path" FI_BOLT_SOFT="$profile" \
		FI_BOLT_SOFT_NAMESPACE="$namespace" PATH="$work/shim:$PATH" && exec setsid --wait \
		"$fabtests_bin/runfabtests.sh" $verbose -p "$work/bin" -t "$test_set" \
		-T "$time_limit" -f "$exclude_file" \
		-E "FI_PROVIDER_PATH=$provider_path" -E "FI_BOLT_SOFT=$profile" \
		-E "FI_BOLT_SOFT_NAMESPACE=$namespace" \
		-s 127.0.0.1 -c 127.0.0.1 -L "-B $port" -C "-P $port" "$@" bolt) &
	session=$!
	wait $session
	status=$?
	session=""
	failures=$((failures + status))
done
[ $failures -gt 125 ] && failures=125
exit $failures
