#!/bin/sh
# api_version.sh: test/consumers/api_version, an application asking for bolt
# at its libfabric's own API version (and FI_VERSION(2,0) under 2.x), on the
# software device, loading bolt from FI_PROVIDER_PATH.
set -u
FI_PROVIDER_PATH="$(pwd)/.libs"
export FI_PROVIDER_PATH
. "$(dirname "$0")/../integration/sanitizer_preload.sh"
namespace="api-version-$$"
FI_BOLT_SOFT=rocev2 FI_BOLT_SOFT_NAMESPACE=$namespace timeout 60 test/consumers/api_version
status=$?
rm -f /dev/shm/bolt-softrdma-*-"$namespace"
exit $status
