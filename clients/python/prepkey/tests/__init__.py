"""Tests of the prepkey package against real sidecars.

The package is imported from this source tree (src/ layout), not from an
installed copy: run from the repository root with

    /usr/bin/python3 -m unittest discover -s clients/python/prepkey/tests -t clients/python/prepkey -v

The environment names the sidecars (clients/run.sh starts them):
PREPKEY_HOST, PREPKEY_PORT, PREPKEY_PASSWORD (a working sidecar) and
PREPKEY_UNAVAILABLE_PORT (one whose backend is down).
"""

import os
import sys

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)
