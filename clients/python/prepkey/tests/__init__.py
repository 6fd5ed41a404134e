"""Tests of the prepkey package against real sidecars.

The package is imported from this source tree (src/ layout), unless
PREPKEY_TEST_INSTALLED names the environment (a venv) whose installed copy
must be tested instead (test-package.sh: the built wheel). Run from the
repository root with

    /usr/bin/python3 -m unittest discover -s clients/python/prepkey/tests -t clients/python/prepkey -v

The environment names the sidecars (clients/run.sh starts them):
PREPKEY_HOST, PREPKEY_PORT, PREPKEY_PASSWORD (a working sidecar) and
PREPKEY_UNAVAILABLE_PORT (one whose backend is down).
"""

import os
import sys

_INSTALLED = os.environ.get("PREPKEY_TEST_INSTALLED")
if _INSTALLED:
    import prepkey

    where = os.path.realpath(prepkey.__file__)
    if not where.startswith(os.path.realpath(_INSTALLED) + os.sep):
        raise RuntimeError(f"prepkey imported from {where}, not from the installed copy in {_INSTALLED}")
    print(f"\nprepkey tests: the installed package {where}", file=sys.stderr)
else:
    _SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    if _SRC not in sys.path:
        sys.path.insert(0, _SRC)
