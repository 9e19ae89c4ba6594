"""`pip install client/python` as a user does it: into a fresh venv (--system-site-packages, for
Debian's grpcio/protobuf/numpy; --no-build-isolation --no-deps, offline), the package builds its
gRPC stubs from proto/ and, run from the venv with nothing of the build tree on its path, calls a
real cuimg-server: health, unary and streamed morphology equal to the build tree's client."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import cuimg
import cuimg.client
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
REPO = os.environ["CUIMG_REPO"]

# Run by the venv's python: imports cuimg from the venv only, writes what it got to argv[2].
SCRIPT = r"""
import sys
import numpy as np
import cuimg
import cuimg.client
from cuimg.v1 import imaging_service_pb2_grpc
prefix = sys.prefix
assert cuimg.client.__file__.startswith(prefix), cuimg.client.__file__
assert imaging_service_pb2_grpc.__file__.startswith(prefix), imaging_service_pb2_grpc.__file__
volume = np.load(sys.argv[3])
with cuimg.Client(sys.argv[1], stream_threshold=0) as c:
    assert c.health() == "SERVING"
    streamed = c.morphology(volume, "open:ellipse:5x5x3")
    assert c.last_stream is not None
    unary = c.morphology(volume, "open:ellipse:5x5x3", stream=False)
np.save(sys.argv[2], np.stack([streamed, unary]))
print("venv client ok")
"""


class PythonPackage(unittest.TestCase):
    def test_pip_install_into_a_fresh_venv_and_call_the_server(self):
        server = ServerProcess(SERVER, "--backend=cpu")
        try:
            with tempfile.TemporaryDirectory() as tmp:
                # A copy of what the install reads, so the build leaves nothing in the checkout
                # (setuptools writes build/ and *.egg-info beside setup.py).
                shutil.copytree(
                    os.path.join(REPO, "client", "python"),
                    os.path.join(tmp, "client", "python"),
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"),
                )
                shutil.copytree(os.path.join(REPO, "proto"), os.path.join(tmp, "proto"))
                venv = os.path.join(tmp, "venv")
                env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
                subprocess.run(
                    [sys.executable, "-m", "venv", "--system-site-packages", venv],
                    check=True,
                    env=env,
                    timeout=120,
                )
                python = os.path.join(venv, "bin", "python")
                install = subprocess.run(
                    [
                        python,
                        "-m",
                        "pip",
                        "install",
                        "--no-build-isolation",
                        "--no-deps",
                        os.path.join(tmp, "client", "python"),
                    ],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=300,
                )
                self.assertEqual(install.returncode, 0, install.stdout + install.stderr)

                volume = np.random.default_rng(5).integers(-900, 900, (9, 21, 26)).astype(np.int16)
                np.save(os.path.join(tmp, "in.npy"), volume)
                out = os.path.join(tmp, "out.npy")
                run = subprocess.run(
                    [python, "-c", SCRIPT, server.target, out, os.path.join(tmp, "in.npy")],
                    capture_output=True,
                    text=True,
                    env=env,
                    cwd=tmp,
                    timeout=120,
                )
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                self.assertIn("venv client ok", run.stdout)
                streamed, unary = np.load(out)
                with cuimg.Client(server.target, stream_threshold=None) as c:
                    expected = c.morphology(volume, "open:ellipse:5x5x3")
                np.testing.assert_array_equal(streamed, expected)
                np.testing.assert_array_equal(unary, expected)
        finally:
            self.assertEqual(server.terminate(), 0, server.log())


if __name__ == "__main__":
    unittest.main(verbosity=2)
