"""Builds the cuimg package with its generated gRPC stubs (pyproject.toml holds the metadata).

The stubs (cuimg/v1/*_pb2.py, *_pb2_grpc.py) are generated into the build directory from the
checkout's proto/cuimg/v1/*.proto, never into the source tree, by protoc with grpc_python_plugin
(Debian protobuf-compiler, protobuf-compiler-grpc), or by grpc_tools.protoc when those programs
are missing and grpcio-tools is installed. Environment overrides: CUIMG_PROTO_DIR (the directory
holding cuimg/v1/), CUIMG_PROTOC, CUIMG_GRPC_PYTHON_PLUGIN.
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def proto_dir() -> str:
    """The directory holding cuimg/v1/*.proto: CUIMG_PROTO_DIR, else the checkout's proto/."""
    path = os.environ.get("CUIMG_PROTO_DIR", os.path.join(HERE, "..", "..", "proto"))
    if not glob.glob(os.path.join(path, "cuimg", "v1", "*.proto")):
        sys.exit(
            f"cuimg: no cuimg/v1/*.proto under {path}: install from a cuimg checkout "
            "(pip install client/python) or set CUIMG_PROTO_DIR"
        )
    return os.path.abspath(path)


def generate_stubs(out_dir: str) -> None:
    """protoc's Python messages and gRPC stubs for every cuimg/v1 proto, into out_dir/cuimg/v1."""
    root = proto_dir()
    protos = sorted(glob.glob(os.path.join(root, "cuimg", "v1", "*.proto")))
    os.makedirs(os.path.join(out_dir, "cuimg", "v1"), exist_ok=True)
    protoc = os.environ.get("CUIMG_PROTOC") or shutil.which("protoc")
    plugin = os.environ.get("CUIMG_GRPC_PYTHON_PLUGIN") or shutil.which("grpc_python_plugin")
    args = [f"--proto_path={root}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}"]
    if protoc and plugin:
        subprocess.run(
            [protoc, f"--plugin=protoc-gen-grpc_python={plugin}", *args, *protos], check=True
        )
        return
    try:
        from grpc_tools import protoc as grpc_tools_protoc
    except ImportError:
        sys.exit(
            "cuimg: generating the stubs needs protoc and grpc_python_plugin (Debian "
            "protobuf-compiler, protobuf-compiler-grpc) or grpcio-tools"
        )
    if grpc_tools_protoc.main(["protoc", *args, *protos]) != 0:
        sys.exit("cuimg: grpc_tools.protoc failed")


class BuildPyWithStubs(build_py):
    """build_py, then the generated stubs beside the package in the build directory."""

    def run(self) -> None:
        super().run()
        generate_stubs(self.build_lib)


setup(cmdclass={"build_py": BuildPyWithStubs})
