"""The README's examples, run as written: every ```python block of README.md
as a script of its own (this interpreter, the prepkey these tests import),
against the sidecar of the environment (PREPKEY_URL, which the examples read)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import unittest
from urllib.parse import quote

from .support import sidecars

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def python_blocks() -> list:
    with open(README, encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```$", f.read(), flags=re.S | re.M)


class ReadmeTest(unittest.TestCase):
    def test_examples_run(self) -> None:
        env = sidecars()
        blocks = python_blocks()
        self.assertGreaterEqual(len(blocks), 2)
        url = f"redis://:{quote(env.password or '', safe='')}@{env.host}:{env.port}"
        import prepkey

        package_root = os.path.dirname(os.path.dirname(os.path.abspath(prepkey.__file__)))
        path = [package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        run_env = dict(os.environ, PREPKEY_URL=url, PYTHONPATH=os.pathsep.join(path))
        for i, code in enumerate(blocks):
            with self.subTest(block=i):
                with tempfile.NamedTemporaryFile("w", suffix=f"-readme-{i}.py", delete=False) as f:
                    f.write(code)
                self.addCleanup(os.unlink, f.name)
                done = subprocess.run(
                    [sys.executable, "-W", "error::DeprecationWarning", f.name],
                    env=run_env, capture_output=True, text=True, timeout=60,
                )
                self.assertEqual(done.returncode, 0, f"block {i}:\n{code}\n{done.stderr}")
                self.assertTrue(done.stdout, "the example printed nothing")

if __name__ == "__main__":
    unittest.main()
