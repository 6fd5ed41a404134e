"""The built sdist and wheel carry the metadata a package index shows:
``python3 tests/dist_check.py SDIST WHEEL LICENSE`` (test-package.sh runs it).
Exits non-zero, naming what is wrong."""

from __future__ import annotations

import sys
import tarfile
import zipfile
from email.parser import Parser


def main(sdist: str, wheel: str, license_path: str) -> int:
    problems = []
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n.rsplit("/", 1)[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(z.read(f"{info}/METADATA").decode("utf-8"))
        licence = z.read(f"{info}/LICENSE") if f"{info}/LICENSE" in names else None
        typed = "prepkey/py.typed" in names
    with open(license_path, "rb") as f:
        want_license = f.read()
    expected = {
        "Name": "prepkey",
        "License": "Apache-2.0",
        "Author": "prepkey authors",
        "Requires-Python": ">=3.8",
        "Description-Content-Type": "text/markdown",
    }
    for field, value in expected.items():
        if meta.get(field) != value:
            problems.append(f"{field}: {meta.get(field)!r}, want {value!r}")
    urls = meta.get_all("Project-URL") or []
    for label in ("Homepage", "Repository", "Issues"):
        if not any(u.startswith(f"{label}, https://github.com/prepkey/prepkey") for u in urls):
            problems.append(f"no Project-URL {label}")
    if not any(r.replace(" ", "").startswith("redis(>=4.3)") or r.replace(" ", "") == "redis>=4.3"
               for r in meta.get_all("Requires-Dist") or []):
        problems.append(f"Requires-Dist: {meta.get_all('Requires-Dist')}")
    if "License :: OSI Approved :: Apache Software License" not in (meta.get_all("Classifier") or []):
        problems.append("no Apache license classifier")
    if "# prepkey for Python" not in meta.get_payload():
        problems.append("the long description is not the README")
    if licence != want_license:
        problems.append("the wheel's LICENSE is not the package's LICENSE")
    if not typed:
        problems.append("py.typed missing from the wheel")
    with tarfile.open(sdist) as t:
        members = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
    for needed in ("LICENSE", "README.md", "pyproject.toml", "src/prepkey/__init__.py", "src/prepkey/py.typed"):
        if needed not in members:
            problems.append(f"sdist misses {needed}")
    for p in problems:
        print(f"dist_check: {p}", file=sys.stderr)
    if not problems:
        print(f"dist_check: {meta['Name']} {meta['Version']}: metadata, LICENSE, README, py.typed ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
