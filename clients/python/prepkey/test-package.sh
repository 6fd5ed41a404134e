#!/usr/bin/env bash
# Builds the sdist and the wheel of this package (offline: Debian's
# python3-build and python3-setuptools, no build isolation), checks their
# metadata (twine check when twine is installed, and the fields read back
# from the wheel), installs the WHEEL (not this folder) into a fresh venv
# that sees Debian's python3-redis, and runs the README's examples and the
# tests against that installed copy. clients/run.sh runs it as the
# python-package-helper suite, with the sidecars' variables set (see
# tests/__init__.py); PYTHON names the interpreter (default /usr/bin/python3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/prepkey-py-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Build from a copy, so that build/ and *.egg-info stay out of the tree.
mkdir "$work/src"
cp -r "$here/pyproject.toml" "$here/README.md" "$here/LICENSE" "$here/src" "$work/src/"
"$py" -m build --no-isolation --outdir "$work/dist" "$work/src" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
wheel=$(ls "$work"/dist/prepkey-*-py3-none-any.whl)
sdist=$(ls "$work"/dist/prepkey-*.tar.gz)
echo "built $(basename "$sdist") $(basename "$wheel")"
if command -v twine >/dev/null; then
	twine check --strict "$sdist" "$wheel"
else
	echo "twine not installed: metadata checked below only"
fi
"$py" "$here/tests/dist_check.py" "$sdist" "$wheel" "$here/LICENSE"

# without pip (ensurepip is slow): the system pip installs into it
"$py" -m venv --system-site-packages --without-pip "$work/venv"
"$py" -m pip --python "$work/venv/bin/python" install --quiet --no-deps --no-index "$wheel"
# The tests import the installed prepkey (PREPKEY_TEST_INSTALLED: tests/
# does not put src/ on the path) and say where it came from.
cd "$here"
PREPKEY_TEST_INSTALLED="$work/venv" "$work/venv/bin/python" -m unittest discover -s tests -t .
