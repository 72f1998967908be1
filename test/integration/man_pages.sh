#!/bin/sh
# man_pages.sh: fi_bolt(7) documents every FI_BOLT_ parameter that bolt
# defines (as fi_info -e lists them) under RUNTIME PARAMETERS, and both man
# pages render without warnings.
set -u
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
page="$top_srcdir/man/fi_bolt.7"
failures=0

. "$(dirname "$0")/sanitizer_preload.sh"

FI_PROVIDER_PATH="$(pwd)/.libs" fi_info -e >"parameters.$$" 2>&1
parameters=$(sed -n 's/^# \(FI_BOLT_[A-Z0-9_]*\):.*/\1/p' "parameters.$$")
count=$(echo "$parameters" | grep -c FI_BOLT_)
if [ "$count" -lt 20 ]; then
	echo "FAILED: fi_info -e lists only $count FI_BOLT_ parameters"
	cat "parameters.$$"
	failures=$((failures + 1))
fi
sed -n '/^\.SH RUNTIME PARAMETERS/,/^\.SH [A-Z]/p' "$page" >"section.$$"
for parameter in $parameters; do
	if grep -Eq "(^|[ \"])$parameter([ ,\"]|\$)" "section.$$"; then
		echo "ok: fi_bolt(7) documents $parameter"
	else
		echo "FAILED: fi_bolt(7) has no $parameter under RUNTIME PARAMETERS"
		failures=$((failures + 1))
	fi
done

# render PAGE: groff's warnings about the page, if groff is there to ask
# (without the sanitizer runtimes, which are for the provider, not groff).
render() {
	command -v groff >/dev/null 2>&1 || return 0
	env -u LD_PRELOAD LC_ALL=C.UTF-8 groff -t -man -Tutf8 -ww -z "$1" 2>&1
}
for manual in "$page" "$top_srcdir/man/bolt_info.1"; do
	warnings=$(render "$manual")
	if [ -z "$warnings" ]; then
		echo "ok: $(basename "$manual") renders without warnings"
	else
		echo "FAILED: $(basename "$manual"): $warnings"
		failures=$((failures + 1))
	fi
done
rm -f "parameters.$$" "section.$$"
[ $failures -eq 0 ]
