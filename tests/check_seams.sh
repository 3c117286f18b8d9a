#!/usr/bin/env bash
# Issue 9 seams, checked on the source tree:
#  1. ranks/ (one rank's profile) includes nothing from collectives/ (what NCCL means);
#  2. no code outside the readers knows a format: "nsys" and "kineto" appear (any case) only in
#     ranks/readers/ and the format's reader header, and in src/sim/ (the generator writes both).
# Usage: check_seams.sh [SOURCE_DIR]; exit 1 listing each violation.
set -u
cd "${1:-$(dirname "$0")/..}"
bad=0
if out=$(grep -rn '#include "collectives/' ranks/); then
  echo "ranks/ includes collectives/:"; echo "$out"; bad=1
fi
if out=$(grep -rniI 'nsys' src collectives ranks topology --include='*.cpp' --include='*.hpp' --include='*.h' |
         grep -v '^src/sim/\|^ranks/readers/\|^ranks/include/ranks/nsys_reader\.hpp:'); then
  echo "the nsys format named outside its reader:"; echo "$out"; bad=1
fi
if out=$(grep -rniI 'kineto' src collectives ranks topology --include='*.cpp' --include='*.hpp' --include='*.h' |
         grep -v '^src/sim/\|^ranks/readers/\|^ranks/include/ranks/kineto_reader\.hpp:'); then
  echo "the Kineto format named outside its reader:"; echo "$out"; bad=1
fi
[ "$bad" = 0 ] && echo "seams hold"
exit $bad
