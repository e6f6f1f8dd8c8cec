#!/usr/bin/env bash
# Main-thread blocks end to end on a real program (issue 13): runs
# scripts/demo-blocks' steps with --check against this build — a desktop
# program stalls its AWT event dispatch thread in known methods, is
# obfuscated with ProGuard, instrumented, run with -Dbeatline.dispatch=awt in
# both upload modes; GET /blocks must show each stall once per signature
# with its count and the original names of its culprit and path, and no
# quick or below-threshold event.
#
#   tests/integration/whole_path_blocks_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: $0 BUILD_DIR WORK_DIR" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec bash "$here/../../scripts/demo-blocks" --build-dir "$1" --work "$2" --check
