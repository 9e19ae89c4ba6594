"""Throwaway TLS material for tests, made with the openssl CLI at test time (no private key is ever
committed): a CA, a server certificate for 127.0.0.1/localhost, client certificates whose common
name is the identity, and a token file."""
import os
import subprocess
import tempfile


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


class TlsMaterial:
    """Files under a temporary directory; attributes hold paths, `read(name)` their bytes."""

    def __init__(self, clients=("alice", "bob"), ca_name="cuimg-test-ca"):
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name
        d = self.dir
        self.ca_key, self.ca_cert = self._path("ca.key"), self._path("ca.crt")
        _openssl(
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            self.ca_key,
            "-out",
            self.ca_cert,
            "-days",
            "2",
            "-subj",
            f"/CN={ca_name}",
            cwd=d,
        )
        self.server_key, self.server_cert = self._issue(
            "server",
            "/CN=cuimg-server",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        )
        self.client = {}
        for name in clients:
            self.client[name] = self._issue(name, f"/CN={name}", "extendedKeyUsage=clientAuth\n")

    def _path(self, name):
        return os.path.join(self.dir, name)

    def _issue(self, name, subject, extensions):
        key, csr, cert, ext = (self._path(f"{name}.{x}") for x in ("key", "csr", "crt", "ext"))
        with open(ext, "w") as f:
            f.write(extensions)
        _openssl(
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            key,
            "-out",
            csr,
            "-subj",
            subject,
            cwd=self.dir,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            self.ca_cert,
            "-CAkey",
            self.ca_key,
            "-CAcreateserial",
            "-out",
            cert,
            "-days",
            "2",
            "-extfile",
            ext,
            cwd=self.dir,
        )
        return key, cert

    def write_tokens(self, lines, name="tokens"):
        path = self._path(name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def server_flags(self, mtls=False, tokens=None):
        flags = [f"--tls_cert_file={self.server_cert}", f"--tls_key_file={self.server_key}"]
        if mtls:
            flags += [f"--tls_client_ca_file={self.ca_cert}", "--require_client_cert"]
        if tokens:
            flags.append(f"--auth_tokens_file={tokens}")
        return flags

    def channel_credentials(self, client=None):
        import grpc

        key = cert = None
        if client:
            key, cert = (self.read(p) for p in self.client[client])
        return grpc.ssl_channel_credentials(
            root_certificates=self.read(self.ca_cert), private_key=key, certificate_chain=cert
        )

    def close(self):
        self._dir.cleanup()
