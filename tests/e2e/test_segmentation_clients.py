"""The segmentation steps and Label through the clients: the Python client's step strings,
marker= and Client.label (its regions as scikit-image's regionprops gives them, its table read
from the response's bytes equal to protobuf's parse), a global chain streamed on one connection;
`cuimg label` (U32 label images in NIfTI, NRRD, .npy and TIFF, the JSON table) and `cuimg
morphology` with segmentation steps and --marker, unary and streamed."""
import json
import os
import subprocess
import tempfile
import unittest

import nibabel as nib
import numpy as np
from skimage.measure import regionprops

import segmentation_cases as cases
import cuimg
from cuimg import segmentation
from cuimg.messages import parse_steps
from cuimg.v1 import label_pb2, morphology_pb2, types_pb2
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")


class SegmentationClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}", "--worker_threads=2")
        cls.client = cuimg.Client(cls.server.target, stream_threshold=None)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.dir.cleanup()
        code = cls.server.terminate()
        assert code == 0, cls.server.log()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def cli(self, *args, expect=0):
        done = subprocess.run(
            [CLIENT, f"--target={self.server.target}", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(done.returncode, expect, done.stdout + done.stderr)
        return done.stdout

    # Python.

    def test_step_strings_parse_to_the_steps_and_refuse_bad_ones(self):
        s = parse_steps(
            "fill_holes,fill_holes:8,reconstruct_dilate:26,open_rec:ellipse:5x5:8,"
            "close_rec:rect:3x3x3,hmax:2.5:4,hmin:7,threshold:-inf:120,"
            "remove_small:9:18,keep_largest:6,dilate:rect:3x3"
        )
        O, T = morphology_pb2, types_pb2
        self.assertEqual(
            [x.op for x in s],
            [
                O.MORPHOLOGY_OP_FILL_HOLES,
                O.MORPHOLOGY_OP_FILL_HOLES,
                O.MORPHOLOGY_OP_RECONSTRUCT_DILATE,
                O.MORPHOLOGY_OP_OPEN_REC,
                O.MORPHOLOGY_OP_CLOSE_REC,
                O.MORPHOLOGY_OP_HMAX,
                O.MORPHOLOGY_OP_HMIN,
                O.MORPHOLOGY_OP_THRESHOLD,
                O.MORPHOLOGY_OP_REMOVE_SMALL,
                O.MORPHOLOGY_OP_KEEP_LARGEST,
                O.MORPHOLOGY_OP_DILATE,
            ],
        )
        self.assertEqual(
            [x.connectivity for x in s[:3]],
            [T.CONNECTIVITY_UNSPECIFIED, T.CONNECTIVITY_8, T.CONNECTIVITY_26],
        )
        self.assertEqual(
            (s[3].element.width, s[3].element.shape, s[3].connectivity),
            (5, O.ELEMENT_SHAPE_ELLIPSE, T.CONNECTIVITY_8),
        )
        self.assertEqual((s[4].element.depth, s[4].iterations), (3, 0))
        self.assertEqual((s[5].h, s[5].connectivity, s[6].h), (2.5, T.CONNECTIVITY_4, 7))
        self.assertEqual((s[7].lo, s[7].hi), (float("-inf"), 120))
        self.assertEqual((s[8].min_voxels, s[8].connectivity), (9, T.CONNECTIVITY_18))
        for bad in (
            "fill_holes:5",
            "hmax",
            "hmax:x",
            "threshold:1",
            "remove_small:-2",
            "keep_largest:8:8",
            "open_rec:rect",
            "open_rec:blob:3x3",
        ):
            with self.assertRaises(ValueError, msg=bad):
                parse_steps(bad)

    def test_morphology_takes_step_strings_and_a_marker(self):
        rng = np.random.default_rng(1)
        mask = cases.random_values(rng, (31, 37), np.uint8, 0, 80)
        marker = cases.random_values(rng, mask.shape, np.uint8, 0, 80)
        got = self.client.morphology(mask, "reconstruct_dilate:8", marker=marker)
        np.testing.assert_array_equal(got, cases.reconstruct(marker, mask, "dilation", 8))
        handle = self.client.upload(marker)
        got = self.client.morphology(mask, "reconstruct_erode", marker=handle)
        np.testing.assert_array_equal(got, cases.reconstruct(marker, mask, "erosion", 4))
        got = self.client.morphology(mask, "threshold:20:60,fill_holes:8,keep_largest:8")
        t = np.where((mask >= 20) & (mask <= 60), 255, 0).astype(np.uint8)
        np.testing.assert_array_equal(got, cases.keep_largest(cases.fill_holes(t, 8), 8))

    def test_a_global_chain_streams_on_one_connection_equal_to_unary(self):
        rng = np.random.default_rng(2)
        volume = cases.random_values(rng, (16, 20, 24), np.int16, -40, 40)
        chain = "dilate:rect:3x3x3,hmax:6:26,erode:rect:3x3"
        unary = self.client.morphology(volume, chain, stream=False)
        client = cuimg.Client(self.server.target, volume_streams=4, slab_bytes=2000)
        try:
            streamed = client.morphology(volume, chain, stream=True)
            self.assertEqual(len(client.last_stream.timings), 1)  # not split
            np.testing.assert_array_equal(streamed, unary)
            local = client.morphology(volume, "dilate:rect:3x3x3,threshold:0:10", stream=True)
            self.assertGreater(len(client.last_stream.timings), 1)  # threshold is local
            np.testing.assert_array_equal(
                local,
                self.client.morphology(volume, "dilate:rect:3x3x3,threshold:0:10", stream=False),
            )
        finally:
            client.close()

    def test_label_returns_regions_as_regionprops_gives_them(self):
        rng = np.random.default_rng(3)
        for shape, connectivity in (((40, 50), 8), ((40, 50), None), ((6, 15, 17), 26)):
            image = cases.random_mask(rng, shape, np.uint16, 0.45)
            intensity = cases.random_values(rng, shape, np.float32, 0, 10)
            labels, regions = self.client.label(
                image, connectivity=connectivity, intensity=intensity, spacing=(0.5, 2.0, 3.0)
            )
            expected = cases.label(image, connectivity)
            np.testing.assert_array_equal(labels, expected)
            self.assertEqual(labels.dtype, np.uint32)
            props = regionprops(expected.astype(np.int64), intensity_image=intensity)
            np.testing.assert_array_equal(regions["voxels"], [p.area for p in props])
            np.testing.assert_array_equal(regions["bbox"], [p.bbox for p in props])
            np.testing.assert_array_equal(regions["centroid"], [p.centroid for p in props])
            mm = np.array([0.5, 2.0, 3.0][: image.ndim][::-1])
            np.testing.assert_array_equal(regions["centroid_mm"], regions["centroid"] * mm)
            np.testing.assert_array_equal(regions["min"], [p.min_intensity for p in props])
            np.testing.assert_array_equal(regions["max"], [p.max_intensity for p in props])
            rows = cases.region_rows(expected, intensity)
            np.testing.assert_array_equal(regions["sum"], rows["sum"])
            np.testing.assert_array_equal(regions["mean"], rows["mean"])
        labels, regions = self.client.label(image, threshold=(1, 2**16), min_voxels=3)
        self.assertNotIn("min", regions)
        self.assertNotIn("centroid_mm", regions)
        np.testing.assert_array_equal(labels, cases.label(image, None, (1, 2**16), 3))

    def test_label_keeps_its_labels_resident(self):
        image = cases.random_mask(np.random.default_rng(4), (20, 30), np.uint8, 0.5)
        kept, regions = self.client.label(
            image, connectivity=8, keep_resident=True, return_data=False
        )
        self.assertIsNone(kept.data)
        self.assertEqual(regions["bbox"].shape[1], 4)  # 2D: the shape came back without pixels
        np.testing.assert_array_equal(self.client.download(kept.handle), cases.label(image, 8))
        cleaned = self.client.morphology(kept.handle, "remove_small:4:8")
        np.testing.assert_array_equal(cleaned, cases.remove_small(cases.label(image, 8), 4, 8))

    def test_the_table_read_from_bytes_equals_protobufs_parse(self):
        table = label_pb2.RegionTable(
            voxels=[3, 1],
            bbox_begin=[0, 1, 0, 4, 4, 0],
            bbox_end=[2, 3, 1, 5, 5, 1],
            centroid=[0.5, 1.5, 0, 4, 4, 0],
            min=[1.5, -2],
            max=[3, 7],
            mean=[2, 1],
            sum=[6, 7],
        )
        response = label_pb2.LabelResponse(region_count=2, regions=table)
        response.labels.image.pixel_type = types_pb2.PIXEL_TYPE_U32
        data = response.SerializeToString()
        # A second RegionTable field is merged by protobuf: columns concatenate.
        extra = label_pb2.LabelResponse(
            regions=label_pb2.RegionTable(voxels=[9])
        ).SerializeToString()
        for wire in (data, data + extra):
            parsed = label_pb2.LabelResponse.FromString(wire)
            labels, count, columns = segmentation.decode_label_response(wire)
            self.assertEqual((labels, count), (parsed.labels, parsed.region_count))
            for name in (
                "voxels",
                "bbox_begin",
                "bbox_end",
                "centroid",
                "centroid_mm",
                "min",
                "max",
                "mean",
                "sum",
            ):
                np.testing.assert_array_equal(
                    columns[name], getattr(parsed.regions, name), err_msg=name
                )

    # The CLI.

    def test_cuimg_label_writes_u32_label_images_and_the_region_table(self):
        rng = np.random.default_rng(5)
        volume = cases.random_values(rng, (5, 21, 26), np.int16, -100, 100)
        np.save(self.path("volume.npy"), volume)
        expected = cases.label(volume, 18, (10, 100), 2)
        for ext in ("nii.gz", "nrrd", "npy", "tif"):
            out = self.path(f"labels.{ext}")
            self.cli(
                "label",
                f"--input={self.path('volume.npy')}",
                f"--output={out}",
                f"--json_out={self.path('regions.json')}",
                "--connectivity=18",
                "--threshold=10:100",
                "--min_voxels=2",
                f"--intensity={self.path('volume.npy')}",
            )
            if ext == "nii.gz":
                got = np.asarray(nib.load(out).dataobj).transpose(2, 1, 0)
            elif ext == "npy":
                got = np.load(out)
            else:
                # Read back by the client's own reader: remove_small:0 keeps every value.
                self.cli(
                    "morphology",
                    f"--input={out}",
                    f"--output={self.path('back.npy')}",
                    "--steps=remove_small:0",
                )
                got = np.load(self.path("back.npy"))
            self.assertEqual(got.dtype, np.uint32, ext)
            np.testing.assert_array_equal(got, expected, err_msg=ext)
        with open(self.path("regions.json")) as f:
            table = json.load(f)
        rows = cases.region_rows(expected, volume)
        self.assertEqual(table["region_count"], int(expected.max()))
        self.assertEqual([r["voxels"] for r in table["regions"]], rows["voxels"].tolist())
        self.assertEqual(
            [r["bbox_begin"] for r in table["regions"]], rows["bbox_begin"].reshape(-1, 3).tolist()
        )
        self.assertEqual([r["sum"] for r in table["regions"]], rows["sum"].tolist())
        self.assertEqual(
            [r["label"] for r in table["regions"]], list(range(1, int(expected.max()) + 1))
        )

    def test_cuimg_label_keeps_resident_and_prints_help(self):
        np.save(
            self.path("mask.npy"),
            cases.random_mask(np.random.default_rng(6), (9, 11), np.uint8, 0.5),
        )
        out = self.cli("label", f"--input={self.path('mask.npy')}", "--keep_resident", "--json")
        summary = json.loads(out)
        self.assertTrue(summary["handle"])
        help_text = self.cli("label", "--help")
        for flag in (
            "--connectivity",
            "--threshold",
            "--min_voxels",
            "--intensity",
            "--keep_resident",
            "--json_out",
        ):
            self.assertIn(flag, help_text)
        self.cli(
            "label",
            f"--input={self.path('mask.npy')}",
            "--json_out=x.json",
            "--connectivity=5",
            expect=2,
        )
        self.cli(
            "label",
            f"--input={self.path('mask.npy')}",
            "--json_out=x.json",
            "--threshold=1",
            expect=2,
        )

    def test_cuimg_morphology_runs_segmentation_steps_unary_and_streamed(self):
        rng = np.random.default_rng(7)
        volume = cases.random_values(rng, (12, 19, 23), np.uint16, 0, 60)
        marker = cases.random_values(rng, volume.shape, np.uint16, 0, 60)
        np.save(self.path("v.npy"), volume)
        np.save(self.path("m.npy"), marker)
        self.cli(
            "morphology",
            f"--input={self.path('v.npy')}",
            f"--output={self.path('r.npy')}",
            "--steps=reconstruct_dilate:26",
            f"--marker={self.path('m.npy')}",
        )
        np.testing.assert_array_equal(
            np.load(self.path("r.npy")), cases.reconstruct(marker, volume, "dilation", 26)
        )
        chain = "--steps=dilate:rect:3x3x3,fill_holes:6,keep_largest:26"
        self.cli(
            "morphology", f"--input={self.path('v.npy')}", f"--output={self.path('u.npy')}", chain
        )
        self.cli(
            "morphology",
            f"--input={self.path('v.npy')}",
            f"--output={self.path('s.npy')}",
            chain,
            "--slab_slices=3",
            "--volume_streams=3",
        )
        np.testing.assert_array_equal(np.load(self.path("s.npy")), np.load(self.path("u.npy")))
        self.cli(
            "morphology",
            f"--input={self.path('v.npy')}",
            f"--output={self.path('x.npy')}",
            "--steps=hmax",
            expect=2,
        )


if __name__ == "__main__":
    unittest.main()
