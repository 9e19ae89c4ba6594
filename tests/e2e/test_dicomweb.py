"""DICOMweb end to end: a real Orthanc with its DICOMweb plugin (Debian orthanc, orthanc-dicomweb),
started here on loopback with a throwaway configuration (basic authentication on, no DICOM port),
and a cuimg-server on the CPU backend. A 64x64x4 CT series made with pydicom and compressed with
DCMTK (RLE and lossless JPEG) is stored with cuimg.dicomweb (STOW-RS); `cuimg morphology` reads it
from Orthanc (QIDO-RS, WADO-RS) and stores the derived series there (STOW-RS); the derived series
is found with QIDO-RS and read back with cuimg.dicomweb: its pixels against SciPy, its geometry
against the source's, its references to the source instances. A JPEG 2000 series (gdcmconv --j2k)
is read in its stored syntax (transfer-syntax=*), which this Orthanc cannot transcode to the
default; its frames go to cuimg-server as they are and the dilation, written as HTJ2K
(--output_syntax=htj2k), is stored with STOW-RS in that syntax and read back as stored (issue 49);
through a proxy that refuses transfer-syntax=* (HTTP 406), the clients fall back to the
default syntax, and Orthanc's HTTP 500 for the JPEG 2000 series is reported with its reason. Then
the failures a user meets: wrong password, unknown series, the caps, malformed URLs. Bearer tokens
and TLS go through a small https proxy with a throwaway CA in front of Orthanc: Orthanc takes basic
authentication only, and Debian 12's Orthanc 1.10.1 with "SslEnabled" closed every https
connection right after the handshake here (curl: empty reply, RSA or EC certificate alike), so
cuimg's TLS is checked against Python's ssl module instead."""
import base64
import http.server
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import numpy as np
import pydicom
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid
from scipy import ndimage

from cuimg import dicom as cuimg_dicom
from cuimg import dicomweb
from server_process import ServerProcess, free_port
from tls_material import TlsMaterial

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
PLUGIN = "/usr/share/orthanc/plugins/libOrthancDicomWeb.so"  # from orthanc-dicomweb
USER, PASSWORD = "cuimg", "s3cret-pw"
TOKEN = "t0ken-for-the-proxy"
STEPS = "dilate:rect:3x3x3"


def write_ct_series(directory, hu):
    """One uncompressed slice per z of `hu` (unsigned 12-bit, intercept -1024, oblique geometry);
    returns the file paths in z order."""
    row_dir, col_dir = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.8, -0.6])
    normal = np.cross(row_dir, col_dir)
    study, series, frame = generate_uid(), generate_uid(), generate_uid()
    paths = []
    for z in range(hu.shape[0]):
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = pydicom.uid.CTImageStorage
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        path = os.path.join(directory, f"ct{z}.dcm")
        ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
        ds.SOPClassUID, ds.SOPInstanceUID = (
            meta.MediaStorageSOPClassUID,
            meta.MediaStorageSOPInstanceUID,
        )
        ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.FrameOfReferenceUID = study, series, frame
        ds.PatientName, ds.PatientID, ds.Modality = "Web^Test", "DW-1", "CT"
        ds.StudyDate, ds.StudyTime, ds.AccessionNumber, ds.StudyID = "20260101", "120000", "A1", "1"
        ds.SeriesNumber, ds.InstanceNumber, ds.SeriesDescription = 3, z + 1, "Chest 2.5mm"
        ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
        ds.ImagePositionPatient = [
            f"{v:.4f}" for v in np.array([-40.0, 12.5, 30.0]) + z * 2.5 * normal
        ]
        ds.ImageOrientationPatient = [f"{v:.6f}" for v in list(row_dir) + list(col_dir)]
        ds.PixelSpacing = ["0.75", "0.7"]
        ds.SliceThickness = "2.5"
        ds.Rows, ds.Columns = hu.shape[1], hu.shape[2]
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
        ds.RescaleSlope, ds.RescaleIntercept = "1", "-1024"
        ds.PixelData = (hu[z].astype(np.int32) + 1024).astype(np.uint16).tobytes()
        ds.is_little_endian, ds.is_implicit_VR = True, False
        ds.save_as(path, write_like_original=False)
        paths.append(path)
    return paths


class Orthanc:
    """Orthanc on a free loopback HTTP port, its storage in a temporary folder."""

    def __init__(self, directory):
        self.port = free_port()
        config = {
            "Name": "cuimg-test",
            "StorageDirectory": os.path.join(directory, "storage"),
            "IndexDirectory": os.path.join(directory, "storage"),
            "HttpPort": self.port,
            "DicomServerEnabled": False,
            "RemoteAccessAllowed": False,
            "AuthenticationEnabled": True,
            "RegisteredUsers": {USER: PASSWORD},
            "Plugins": [PLUGIN],
            "DicomWeb": {"Enable": True, "Root": "/dicom-web/"},
            "SaveJobs": False,
        }
        path = os.path.join(directory, "orthanc.json")
        with open(path, "w") as f:
            json.dump(config, f)
        self.log = open(os.path.join(directory, "orthanc.log"), "w")
        self.process = subprocess.Popen(
            ["Orthanc", path], stdout=self.log, stderr=subprocess.STDOUT
        )
        self.root = f"http://127.0.0.1:{self.port}"
        self.url = self.root + "/dicom-web"
        deadline = time.time() + 30
        while True:
            try:
                self.get("/dicom-web/studies")
                return
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    raise RuntimeError("Orthanc did not start; see " + self.log.name)
                time.sleep(0.1)

    def text(self, path, accept="application/dicom+json"):
        """The body at a path of Orthanc's HTTP server, by an independent client (urllib's own
        basic authentication)."""
        manager = urllib.request.HTTPPasswordMgrWithDefaultRealm()
        manager.add_password(None, self.root + "/", USER, PASSWORD)
        opener = urllib.request.build_opener(urllib.request.HTTPBasicAuthHandler(manager))
        request = urllib.request.Request(self.root + path, headers={"Accept": accept})
        with opener.open(request, timeout=30) as r:
            return r.read().decode()

    def get(self, path):
        """JSON at a path of Orthanc's HTTP server (DICOM JSON under /dicom-web)."""
        body = self.text(path)
        return json.loads(body) if body else []

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


class BearerProxy:
    """https on loopback (the throwaway CA's server certificate), in front of Orthanc: requests
    with "Authorization: Bearer TOKEN" are forwarded with Orthanc's basic credentials, others get
    401. Counts the forwarded ones."""

    def __init__(self, orthanc, tls):
        proxy = self
        self.forwarded = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def forward(self):
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() in ("accept", "content-type")
                }
                credentials = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
                headers["Authorization"] = f"Basic {credentials}"
                request = urllib.request.Request(
                    orthanc.root + self.path,
                    data=body or None,
                    headers=headers,
                    method=self.command,
                )
                try:
                    response = urllib.request.urlopen(request, timeout=30)
                except urllib.error.HTTPError as e:
                    response = e
                with response:
                    data = response.read()
                    self.send_response(response.status)
                    self.send_header("Content-Type", response.headers.get("Content-Type", ""))
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                proxy.forwarded += 1

            do_GET = do_POST = forward

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.server_cert, tls.server_key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/dicom-web"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class NoStoredSyntaxProxy:
    """Plain http on loopback in front of Orthanc, for a server that does not take
    transfer-syntax=*: such requests get 406 Not Acceptable, others are forwarded with Orthanc's
    credentials (answers and errors as Orthanc gave them). Counts both kinds."""

    def __init__(self, orthanc):
        proxy = self
        self.refused = self.forwarded = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if "transfer-syntax" in self.headers.get("Accept", ""):
                    proxy.refused += 1
                    self.send_response(406)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                credentials = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
                request = urllib.request.Request(
                    orthanc.root + self.path,
                    headers={
                        "Accept": self.headers.get("Accept", ""),
                        "Authorization": f"Basic {credentials}",
                    },
                )
                try:
                    response = urllib.request.urlopen(request, timeout=30)
                except urllib.error.HTTPError as e:
                    response = e
                with response:
                    data = response.read()
                    self.send_response(response.status)
                    self.send_header("Content-Type", response.headers.get("Content-Type", ""))
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                proxy.forwarded += 1

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/dicom-web"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def value(item, tag):
    return item[tag]["Value"][0]


class DicomwebEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.tls = TlsMaterial(clients=())
        cls.orthanc = Orthanc(cls.dir)
        cls.proxy = BearerProxy(cls.orthanc, cls.tls)
        cls.server = ServerProcess(SERVER, "--backend=cpu")
        rng = np.random.default_rng(7)
        cls.hu = rng.integers(-1000, 2000, size=(4, 64, 64)).astype(np.int16)
        plain = os.path.join(cls.dir, "plain")
        os.makedirs(plain)
        cls.plain_paths = write_ct_series(plain, cls.hu)
        cls.sources = [pydicom.dcmread(p) for p in cls.plain_paths]
        # Compressed as a modality or archive would send them: RLE and lossless JPEG (both exact).
        compressed = os.path.join(cls.dir, "compressed")
        os.makedirs(compressed)
        cls.compressed_paths = []
        for z, path in enumerate(cls.plain_paths):
            out = os.path.join(compressed, f"ct{z}.dcm")
            tool = ["dcmcrle", path, out] if z % 2 == 0 else ["dcmcjpeg", "+e1", path, out]
            subprocess.run(tool, check=True)
            cls.compressed_paths.append(out)
        cls.auth = (USER, PASSWORD)
        with open(os.path.join(cls.dir, "password"), "w") as f:
            f.write(PASSWORD + "\n")
        cls.study = cls.sources[0].StudyInstanceUID
        cls.series = cls.sources[0].SeriesInstanceUID
        # A JPEG 2000 series of the same study (what a modality or archive may store).
        cls.hu_j2k = rng.integers(-1000, 2000, size=(3, 64, 64)).astype(np.int16)
        j2k_plain, j2k = os.path.join(cls.dir, "j2k_plain"), os.path.join(cls.dir, "j2k")
        os.makedirs(j2k_plain)
        os.makedirs(j2k)
        for z, path in enumerate(write_ct_series(j2k_plain, cls.hu_j2k)):
            ds = pydicom.dcmread(path)
            ds.StudyInstanceUID = cls.study
            ds.save_as(path)
            subprocess.run(["gdcmconv", "--j2k", path, os.path.join(j2k, f"ct{z}.dcm")], check=True)
        cls.j2k_series = pydicom.dcmread(os.path.join(j2k, "ct0.dcm")).SeriesInstanceUID
        stored, _ = dicomweb.store_series(cls.orthanc.url, j2k, auth=cls.auth)
        assert stored == 3, stored
        cls.no_stored_syntax = NoStoredSyntaxProxy(cls.orthanc)
        # As pydicom datasets (the directory form is test_python_workflow's).
        stored, series_url = dicomweb.store_series(
            cls.orthanc.url, [pydicom.dcmread(p) for p in cls.compressed_paths], auth=cls.auth
        )
        assert stored == 4 and series_url.endswith(f"/series/{cls.series}"), (stored, series_url)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.proxy.stop()
        cls.no_stored_syntax.stop()
        cls.orthanc.stop()
        cls.tls.close()
        shutil.rmtree(cls.dir)

    def cuimg(self, source, output, *flags, auth=None):
        if auth is None:
            auth = [
                f"--dicomweb_user={USER}",
                f"--dicomweb_password_file={os.path.join(self.dir, 'password')}",
            ]
        return subprocess.run(
            [
                CLIENT,
                "morphology",
                f"--target={self.server.target}",
                f"--steps={STEPS}",
                f"--input={source}",
                f"--output={output}",
                f"--dicomweb_ca_file={self.tls.ca_cert}",
                *auth,
                *flags,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )

    def series_url(self, series):
        return f"dicomweb+{self.orthanc.url}/studies/{self.study}/series/{series}"

    def test_stored_series_is_compressed_in_orthanc(self):
        # Orthanc's own REST API (not DICOMweb) tells the syntax each instance is stored in.
        syntaxes = set()
        for instance in self.orthanc.get("/instances"):
            tags = self.orthanc.get(f"/instances/{instance}/tags?simplify")
            if tags["SeriesInstanceUID"] == self.series:
                syntaxes.add(self.orthanc.text(f"/instances/{instance}/metadata/TransferSyntax"))
        self.assertEqual(syntaxes, {pydicom.uid.RLELossless, pydicom.uid.JPEGLosslessSV1})

    def test_morphology_dicomweb_to_dicomweb(self):
        before = {
            value(s, "0020000E")
            for s in self.orthanc.get(f"/dicom-web/studies/{self.study}/series")
        }
        result = self.cuimg(self.series_url(self.series), f"dicomweb+{self.orthanc.url}")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("stored 4 instances with STOW-RS", result.stderr)
        self.assertIn(f"wrote dicomweb+{self.orthanc.url} (64x64x4", result.stdout)
        self.assertNotIn("Web^Test", result.stdout + result.stderr)  # patient fields never printed
        after = {
            value(s, "0020000E")
            for s in self.orthanc.get(f"/dicom-web/studies/{self.study}/series")
        }
        derived = after - before
        self.assertEqual(len(derived), 1, (before, after))
        derived_uid = derived.pop()
        self.assertIn(f"/series/{derived_uid}", result.stderr)

        volume, spacing, slices = dicomweb.read_series(
            self.orthanc.url, self.study, derived_uid, auth=self.auth
        )
        # Neutral border: outside voxels never win, which is SciPy's "nearest" for a maximum.
        expected = ndimage.grey_dilation(self.hu, size=(3, 3, 3), mode="nearest")
        np.testing.assert_array_equal(volume, expected)
        self.assertEqual(len(slices), 4)
        source_by_position = {
            tuple(float(v) for v in s.ImagePositionPatient): s for s in self.sources
        }
        for ds in slices:
            source = source_by_position[tuple(float(v) for v in ds.ImagePositionPatient)]
            self.assertEqual(
                [float(v) for v in ds.ImageOrientationPatient],
                [float(v) for v in source.ImageOrientationPatient],
            )
            self.assertEqual(
                [float(v) for v in ds.PixelSpacing], [float(v) for v in source.PixelSpacing]
            )
            self.assertEqual(ds.FrameOfReferenceUID, source.FrameOfReferenceUID)
            self.assertEqual(ds.StudyInstanceUID, self.study)
            self.assertNotEqual(ds.SOPInstanceUID, source.SOPInstanceUID)
            self.assertEqual(list(ds.ImageType)[:2], ["DERIVED", "SECONDARY"])
            self.assertEqual(ds.DerivationDescription, f"cuimg morphology {STEPS}")
            if self.writer_references_sources():
                references = [r.ReferencedSOPInstanceUID for r in ds.SourceImageSequence]
                self.assertEqual(references, [source.SOPInstanceUID])
        self.assertAlmostEqual(spacing[2], 2.5, places=3)

    def test_python_workflow(self):
        # The README's lines: read from the PACS, process, write the derived series, store it.
        import cuimg
        from cuimg import dicom

        url, auth = self.orthanc.url, self.auth
        volume, spacing, slices = dicomweb.read_series(url, self.study, self.series, auth=auth)
        derived_dir = os.path.join(self.dir, "python_derived")
        with cuimg.Client(self.server.target) as c:
            derived_uid = dicom.write_series(
                slices, c.morphology(volume, "erode:cross:3x3"), derived_dir
            )
        count, series_url = dicomweb.store_series(url, derived_dir, auth=auth)
        self.assertEqual(count, 4)
        self.assertTrue(
            series_url.endswith(f"/studies/{self.study}/series/{derived_uid}"), series_url
        )
        back, back_spacing, back_slices = dicomweb.read_series(
            url, self.study, derived_uid, auth=auth
        )
        cross = ndimage.generate_binary_structure(2, 1)[None]  # 3x3 cross in each slice
        np.testing.assert_array_equal(
            back, ndimage.grey_erosion(self.hu, footprint=cross, mode="nearest")
        )
        self.assertEqual(back_spacing, spacing)
        self.assertEqual(
            [s.ImagePositionPatient for s in back_slices], [s.ImagePositionPatient for s in slices]
        )

    @staticmethod
    def writer_references_sources():
        """Whether this cuimg writes SourceImageSequence: the derived-series work that brought
        it (branch dicom) also brought the --uid_root flag. Until that is merged the references
        are not checked; from then on they must be there."""
        help_text = subprocess.run(
            [CLIENT, "--helpfull"], capture_output=True, text=True, check=True
        ).stdout
        return "--uid_root " in help_text

    def test_jpeg2000_series_is_read_in_its_stored_syntax(self):
        syntaxes = set()
        for instance in self.orthanc.get("/instances"):
            if (
                self.orthanc.get(f"/instances/{instance}/tags?simplify")["SeriesInstanceUID"]
                == self.j2k_series
            ):
                syntaxes.add(self.orthanc.text(f"/instances/{instance}/metadata/TransferSyntax"))
        self.assertEqual(syntaxes, {pydicom.uid.JPEG2000Lossless})
        # Why: this Orthanc cannot give the series in the default syntax.
        sop = self.orthanc.get(
            f"/dicom-web/studies/{self.study}/series/{self.j2k_series}/instances"
        )[0]
        with self.assertRaises(urllib.error.HTTPError) as caught:
            self.orthanc.text(
                f"/dicom-web/studies/{self.study}/series/{self.j2k_series}/instances/"
                f"{value(sop, '00080018')}",
                accept='multipart/related; type="application/dicom"',
            )  # the default syntax
        self.assertEqual(caught.exception.code, 500)
        out = os.path.join(self.dir, "j2k_derived")
        result = self.cuimg(self.series_url(self.j2k_series), out)
        self.assertEqual(result.returncode, 0, result.stderr)
        volume, _, _ = cuimg_dicom.read_series(out)
        np.testing.assert_array_equal(
            volume, ndimage.grey_dilation(self.hu_j2k, size=(3, 3, 3), mode="nearest")
        )
        volume, _, _ = dicomweb.read_series(
            self.orthanc.url, self.study, self.j2k_series, auth=self.auth
        )
        np.testing.assert_array_equal(volume, self.hu_j2k)

    def test_jpeg2000_series_round_trip_stored_as_htj2k(self):
        # Issue 49: the JPEG 2000 series' frames go to cuimg-server as they are, the dilation
        # comes back as HTJ2K frames and is stored in Orthanc with STOW-RS in that syntax.
        before = {
            value(s, "0020000E")
            for s in self.orthanc.get(f"/dicom-web/studies/{self.study}/series")
        }
        result = self.cuimg(
            self.series_url(self.j2k_series),
            f"dicomweb+{self.orthanc.url}",
            "--output_syntax=htj2k",
            "--json",
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("decode_us=", json.loads(result.stdout)["server_timing"])
        self.assertIn(f"stored {len(self.hu_j2k)} instances with STOW-RS", result.stderr)
        derived = {
            value(s, "0020000E")
            for s in self.orthanc.get(f"/dicom-web/studies/{self.study}/series")
        } - before
        self.assertEqual(len(derived), 1)
        derived_uid = derived.pop()
        syntaxes = set()
        for instance in self.orthanc.get("/instances"):
            if (
                self.orthanc.get(f"/instances/{instance}/tags?simplify")["SeriesInstanceUID"]
                == derived_uid
            ):
                # The meta header as stored (this Orthanc's DCMTK does not know the UID, so it
                # records no TransferSyntax metadata).
                syntaxes.add(
                    self.orthanc.get(f"/instances/{instance}/header?simplify")["TransferSyntaxUID"]
                )
        self.assertEqual(syntaxes, {"1.2.840.10008.1.2.4.201"})
        # Read back through WADO-RS in its stored syntax, sent as frames again: the identity
        # gives the dilation.
        out = os.path.join(self.dir, "htj2k_back.npy")
        back = subprocess.run(
            [
                CLIENT,
                "morphology",
                f"--target={self.server.target}",
                "--steps=erode:rect:1x1x1",
                f"--input={self.series_url(derived_uid)}",
                f"--output={out}",
                f"--dicomweb_ca_file={self.tls.ca_cert}",
                f"--dicomweb_user={USER}",
                f"--dicomweb_password_file={os.path.join(self.dir, 'password')}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(back.returncode, 0, back.stderr)
        np.testing.assert_array_equal(
            np.load(out), ndimage.grey_dilation(self.hu_j2k, size=(3, 3, 3), mode="nearest")
        )

    def test_server_without_stored_syntax_gets_its_default_and_its_errors_are_quoted(self):
        proxy = self.no_stored_syntax
        source = f"dicomweb+{proxy.url}/studies/{self.study}/series/{self.series}"
        refused, forwarded = proxy.refused, proxy.forwarded
        result = self.cuimg(source, os.path.join(self.dir, "via_default"))
        self.assertEqual(result.returncode, 0, result.stderr)
        # One refusal, then the default for that instance and the other three; and QIDO-RS.
        self.assertEqual((proxy.refused - refused, proxy.forwarded - forwarded), (1, 5))
        volume, _, _ = dicomweb.read_series(proxy.url, self.study, self.series, auth=self.auth)
        np.testing.assert_array_equal(volume, self.hu)
        self.assertEqual(proxy.refused - refused, 2)
        # The JPEG 2000 series in the default syntax: Orthanc's 500, with what it said.
        source = f"dicomweb+{proxy.url}/studies/{self.study}/series/{self.j2k_series}"
        result = self.cuimg(source, os.path.join(self.dir, "never"))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(
            "HTTP 500 (the server says: Error encountered within the plugin engine)", result.stderr
        )
        with self.assertRaises(dicomweb.DicomwebError) as caught:
            dicomweb.read_series(proxy.url, self.study, self.j2k_series, auth=self.auth)
        self.assertEqual(caught.exception.status, 500)
        self.assertIn(
            "(the server says: Error encountered within the plugin engine)", str(caught.exception)
        )

    def test_python_reads_the_source_exactly(self):
        volume, spacing, slices = dicomweb.read_series(
            self.orthanc.url, self.study, self.series, auth=self.auth
        )
        np.testing.assert_array_equal(volume, self.hu)  # the server decompressed them losslessly
        self.assertAlmostEqual(spacing[0], 0.7)
        self.assertAlmostEqual(spacing[1], 0.75)

    def test_wrong_password(self):
        with open(os.path.join(self.dir, "wrong"), "w") as f:
            f.write("nope")
        result = self.cuimg(
            self.series_url(self.series),
            os.path.join(self.dir, "never"),
            f"--dicomweb_password_file={os.path.join(self.dir, 'wrong')}",
        )
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("HTTP 401", result.stderr)
        self.assertNotIn("nope", result.stderr)
        with self.assertRaises(dicomweb.DicomwebError) as caught:
            dicomweb.read_series(self.orthanc.url, self.study, self.series, auth=(USER, "nope"))
        self.assertEqual(caught.exception.status, 401)

    def test_bearer_token(self):
        token = os.path.join(self.dir, "token")
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        before = self.proxy.forwarded
        source = f"dicomweb+{self.proxy.url}/studies/{self.study}/series/{self.series}"
        result = self.cuimg(
            source, f"dicomweb+{self.proxy.url}", auth=[f"--dicomweb_token_file={token}"]
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        # QIDO-RS, 4 WADO-RS and one STOW-RS went through the proxy, each with the token.
        self.assertEqual(self.proxy.forwarded - before, 6)
        series_url = result.stderr.strip().rsplit(" ", 1)[-1]
        derived_uid = series_url.rsplit("/series/", 1)[-1]
        volume, _, _ = dicomweb.read_series(
            self.proxy.url, self.study, derived_uid, auth=TOKEN, ca_file=self.tls.ca_cert
        )
        np.testing.assert_array_equal(
            volume, ndimage.grey_dilation(self.hu, size=(3, 3, 3), mode="nearest")
        )
        result = self.cuimg(source, os.path.join(self.dir, "never"), auth=[])
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("HTTP 401", result.stderr)

    def test_untrusted_certificate(self):
        # Without --dicomweb_ca_file the throwaway CA is unknown: the handshake must fail.
        token = os.path.join(self.dir, "token")
        with open(token, "w") as f:
            f.write(TOKEN)
        before = self.proxy.forwarded
        result = subprocess.run(
            [
                CLIENT,
                "morphology",
                f"--target={self.server.target}",
                f"--steps={STEPS}",
                f"--input=dicomweb+{self.proxy.url}/studies/{self.study}/series/{self.series}",
                f"--output={self.dir}/never",
                f"--dicomweb_token_file={token}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("certificate", result.stderr.lower())
        with self.assertRaises(dicomweb.DicomwebError):
            dicomweb.read_series(self.proxy.url, self.study, self.series, auth=TOKEN)
        self.assertEqual(self.proxy.forwarded, before)

    def test_unknown_series(self):
        result = self.cuimg(self.series_url("1.2.3.4"), os.path.join(self.dir, "never"))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("no instances in this series", result.stderr)

    def test_instance_cap(self):
        result = self.cuimg(
            self.series_url(self.series),
            os.path.join(self.dir, "never"),
            "--dicomweb_max_instances=3",
        )
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("4 instances, more than the limit of 3", result.stderr)
        result = self.cuimg(
            self.series_url(self.series),
            os.path.join(self.dir, "never"),
            "--dicomweb_max_bytes=20000",
        )
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("larger than the limit of 20000 bytes", result.stderr)
        with self.assertRaises(ValueError):
            dicomweb.read_series(
                self.orthanc.url, self.study, self.series, auth=self.auth, max_instances=3
            )

    def test_malformed_urls(self):
        for url, message in [
            (f"dicomweb+{self.orthanc.url}/studies/{self.study}", "ends in /studies/"),
            (f"dicomweb+{self.orthanc.url}/studies/{self.study}/series/x'y", "series UID"),
            ("dicomweb+ftp://127.0.0.1/studies/1/series/2", "http or https"),
            (self.series_url(self.series) + "?limit=1", "no query"),
        ]:
            result = self.cuimg(url, os.path.join(self.dir, "never"))
            self.assertEqual(result.returncode, 2, (url, result.stderr))
            self.assertIn(message, result.stderr)
        result = self.cuimg(
            self.series_url(self.series), f"dicomweb+{self.orthanc.url}/studies/1.2"
        )
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("without /studies", result.stderr)
        # Credentials never go over plain http to another host.
        result = self.cuimg(
            "dicomweb+http://192.0.2.1/dicom-web/studies/1/series/2",
            os.path.join(self.dir, "never"),
        )
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("credentials are sent over https only", result.stderr)


class PythonMultipart(unittest.TestCase):
    """cuimg.dicomweb's multipart parser on the bodies tests/client/multipart_test.cc gives the
    CLI's: the two read the same answers the same way."""

    def test_archive_reason_as_the_cli_quotes_it(self):  # ArchiveReasonTest in multipart_test.cc
        orthanc = (
            b'{\n\t"HttpError" : "Internal Server Error",\n\t"Message" : '
            b'"Error encountered within the plugin engine",\n\t"OrthancStatus" : 1\n}'
        )
        self.assertEqual(
            dicomweb.archive_reason(orthanc), "Error encountered within the plugin engine"
        )
        details = (
            b'{"Details": "Unsupported transfer syntax in WADO-RS: 1.2.3",'
            b' "Message": "Bad request"}'
        )
        self.assertEqual(
            dicomweb.archive_reason(details), "Unsupported transfer syntax in WADO-RS: 1.2.3"
        )
        self.assertEqual(
            dicomweb.archive_reason(b"Service \x1b[31mdown\x7f\tfor now\r\nsecond line"),
            "Service [31mdown for now",
        )
        self.assertEqual(len(dicomweb.archive_reason(b"x" * 5000)), 200)
        self.assertEqual(dicomweb.archive_reason(b""), "")
        self.assertEqual(dicomweb.archive_reason(b"[1, 2]"), "")

    def test_reads_preamble_headers_padding_and_epilogue(self):
        boundary = dicomweb.multipart_boundary('Multipart/Related;BOUNDARY="a b:c";type=x')
        self.assertEqual(boundary, "a b:c")
        body = (
            b"preamble\r\n--xyz \t\r\nContent-Type: application/dicom\r\nX: y\r\n\r\n"
            b"DICM\r\n--\r\n--xyz\r\n\r\nsecond\r\n--xyz--\r\nepilogue"
        )
        self.assertEqual(
            dicomweb.split_multipart(body, "xyz", 10),
            [(b"Content-Type: application/dicom\r\nX: y", b"DICM\r\n--"), (b"", b"second")],
        )

    def test_refuses_malformed_bodies(self):
        for content_type in (
            "application/dicom",
            "multipart/related; type=x",
            "multipart/related; boundary=",
            "multipart/related; boundary=" + "a" * 71,
        ):
            with self.assertRaises(ValueError):
                dicomweb.multipart_boundary(content_type)
        for body, message in [
            (b"no boundary here", "no boundary line"),
            (b"--b\r\nContent-Type: x\r\n", "blank line"),
            (b"--b\r\n\r\ntruncated", "truncated"),
            (b"--bX\r\n\r\nx\r\n--b--", "CRLF"),
            (b"--b\r\n\r\n1\r\n--b\r\n\r\n2\r\n--b--", "more than 1 parts"),
        ]:
            with self.assertRaisesRegex(ValueError, message):
                dicomweb.split_multipart(body, "b", 1)


if __name__ == "__main__":
    unittest.main()
