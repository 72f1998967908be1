# sanitizer_preload.sh, sourced: a provider built with sanitizers loads into
# uninstrumented libfabric tools only when the sanitizer runtimes come first.
library="$(pwd)/.libs/libbolt-fi.so"
for runtime in asan ubsan; do
	if readelf -d "$library" | grep -aq "NEEDED.*lib$runtime"; then
		LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$(${CC:-cc} -print-file-name=lib$runtime.so)"
		export LD_PRELOAD
		# The tools' own allocations are not ours to judge.
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
		export ASAN_OPTIONS
	fi
done
