"""Starts a real cuimg-server binary on free loopback ports for tests, and stops it."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import grpc


def free_port():
    """A loopback TCP port that is free now, for a process that must be told its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid, field):
    """A /proc/PID/status field (VmHWM, VmRSS), in kB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


class ServerProcess:
    """`extra_args` after CUIMG_SERVER_FLAGS (space-separated, e.g. --jpeg_decoder=gpu to run a
    suite with the GPU JPEG decoder), so a test's own flags win. `env`: the server's environment
    (default: this process's)."""

    def __init__(self, binary, *extra_args, listen="127.0.0.1:0", env=None):
        self._dir = tempfile.TemporaryDirectory()
        port_file = os.path.join(self._dir.name, "ports.json")
        self.log_path = os.path.join(self._dir.name, "server.log")
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [
                binary,
                f"--listen_address={listen}",
                "--metrics_address=127.0.0.1:0",
                f"--port_file={port_file}",
                *os.environ.get("CUIMG_SERVER_FLAGS", "").split(),
                *extra_args,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.time() + 30
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if self.process.poll() is not None or time.time() > deadline:
                raise RuntimeError("cuimg-server did not start:\n" + self.log())
            time.sleep(0.05)
        with open(port_file) as f:
            ports = json.load(f)
        self.grpc_port = ports["grpc"]
        self.metrics_port = ports["metrics"]
        self.health_port = ports.get("health", 0)
        self.target = f"127.0.0.1:{self.grpc_port}"

    def channel(self):
        """An insecure channel to the gRPC port without gRPC's message size limits (the server
        enforces its own)."""
        return grpc.insecure_channel(
            self.target,
            options=[("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)],
        )

    def metrics(self):
        """The metrics endpoint's text (Prometheus exposition format)."""
        return (
            urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10)
            .read()
            .decode()
        )

    def request_counts(self):
        """cuimg_requests_total by (rpc, code), scraped from the metrics endpoint."""
        text = self.metrics()
        counts = {}
        for line in text.splitlines():
            if line.startswith("cuimg_requests_total{"):
                labels, value = line[len("cuimg_requests_total{") :].split("} ")
                fields = dict(kv.split("=", 1) for kv in labels.split(","))
                counts[(fields["rpc"].strip('"'), fields["code"].strip('"'))] = float(value)
        return counts

    def log(self):
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path) as f:
            return f.read()

    def terminate(self, timeout=60):
        """SIGTERM; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self._log.close()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if not self._log.closed:
            self._log.close()
