#!/usr/bin/env bash
# The whole product on a real program (issue 5): runs scripts/demo's steps with
# --check against this build — ProGuard obfuscates itself, beatline-instrument
# instruments the obfuscated jar, scripts/upload-build uploads mapping and
# method-ID file to a fresh beatline-server, the instrumented ProGuard does
# real work with beatline-runtime.jar, and slow-methods / call-tree must show
# original names with proguard.ProGuard.main at the root of the main thread.
#
#   tests/integration/whole_path_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: $0 BUILD_DIR WORK_DIR" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec bash "$here/../../scripts/demo" --build-dir "$1" --work "$2" --check
