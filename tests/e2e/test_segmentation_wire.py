"""The segmentation steps and Label over the wire (real cuimg-server, Python grpcio), bit for bit
against SciPy and scikit-image (segmentation_cases.py): every step and Label on random,
adversarial (spiral, maze, serpentine) and real-data inputs, 2D and 3D, each connectivity, each
pixel type; streamed volumes with global steps equal to the unary call; label images kept
resident feeding the mask steps; bad parameters refused naming the field. Runs on the CPU backend
in CI and on the CUDA backend on the GPU machine (CUIMG_BACKEND)."""
import os
import unittest

import grpc
import numpy as np
from PIL import Image

import segmentation_cases as cases
from cuimg import wire_contract
from cuimg.v1 import (
    imaging_service_pb2_grpc,
    label_pb2,
    morphology_pb2,
    resident_pb2,
    streaming_pb2,
    types_pb2,
)
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
OP = morphology_pb2
CONNECTIVITIES_2D = (None, 4, 8)
CONNECTIVITIES_3D = (None, 6, 18, 26)


def step(op, connectivity=None, **fields):
    s = morphology_pb2.MorphologyStep(op=op, **fields)
    if connectivity is not None:
        s.connectivity = cases.CONNECTIVITY[connectivity]
    return s


def box(size):
    return morphology_pb2.StructuringElement(
        shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=size, height=size
    )


def grey_image(path):
    return np.array(Image.open(path).convert("L"))


class SegmentationWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}", "--worker_threads=2")
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        code = cls.server.terminate()
        assert code == 0, cls.server.log()

    def morphology(self, image, steps, marker=None):
        request = morphology_pb2.MorphologyRequest(
            input=types_pb2.ImageSource(image=cases.image_proto(image)), steps=steps
        )
        if marker is not None:
            request.marker.image.CopyFrom(cases.image_proto(marker))
        response = self.stub.Morphology(request, timeout=60)
        return cases.from_proto(response.result.image, image.dtype)

    def label(self, image, connectivity=None, **fields):
        request = label_pb2.LabelRequest(
            input=types_pb2.ImageSource(image=cases.image_proto(image)), **fields
        )
        if connectivity is not None:
            request.connectivity = cases.CONNECTIVITY[connectivity]
        return self.stub.Label(request, timeout=60)

    def assert_label(
        self, image, connectivity=None, threshold=None, min_voxels=0, intensity=None, msg=""
    ):
        fields = {"min_voxels": min_voxels}
        if threshold is not None:
            fields["threshold"] = label_pb2.LabelThreshold(lo=threshold[0], hi=threshold[1])
        if intensity is not None:
            fields["intensity"] = types_pb2.ImageSource(image=cases.image_proto(intensity))
        response = self.label(image, connectivity, **fields)
        expected = cases.label(image, connectivity, threshold, min_voxels)
        got = cases.from_proto(response.labels.image, np.uint32)
        np.testing.assert_array_equal(got, expected, err_msg=msg)
        self.assertEqual(response.region_count, int(expected.max()), msg)
        rows = cases.region_rows(expected, intensity)
        table = response.regions
        np.testing.assert_array_equal(table.voxels, rows["voxels"], err_msg=msg)
        np.testing.assert_array_equal(table.bbox_begin, rows["bbox_begin"], err_msg=msg)
        np.testing.assert_array_equal(table.bbox_end, rows["bbox_end"], err_msg=msg)
        np.testing.assert_array_equal(table.centroid, rows["centroid"], err_msg=msg)
        if intensity is None:
            self.assertEqual(len(table.min), 0, msg)
        else:
            for key in ("min", "max", "mean", "sum"):
                np.testing.assert_array_equal(
                    getattr(table, key), rows[key], err_msg=f"{msg} {key}"
                )
        return response

    def assert_refused(self, call, request, field, reason=None):
        with self.assertRaises(grpc.RpcError) as caught:
            call(request, timeout=30)
        e = caught.exception
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT, e.details())
        info = wire_contract.error_info(e.trailing_metadata())
        self.assertIsNotNone(info, e.details())
        self.assertEqual(info.field, field, e.details())
        if reason is not None:
            self.assertEqual(info.reason, reason, e.details())

    # Label.

    def test_label_equals_scipy_for_every_type_connectivity_and_dimension(self):
        rng = np.random.default_rng(1)
        for pixel_type, dtype in cases.TYPES:
            for shape, connectivities in (
                ((37, 53), CONNECTIVITIES_2D),
                ((7, 19, 23), CONNECTIVITIES_3D),
            ):
                for connectivity in connectivities:
                    density = rng.uniform(0.2, 0.7)
                    image = cases.random_mask(rng, shape, dtype, density)
                    self.assert_label(
                        image, connectivity, msg=f"{dtype.__name__} {shape} c={connectivity}"
                    )

    def test_label_threshold_min_voxels_and_intensity_statistics(self):
        rng = np.random.default_rng(2)
        for _, dtype in cases.TYPES:
            image = cases.random_values(rng, (41, 29), dtype, 0, 9)
            intensity = cases.random_values(rng, (41, 29), np.float32, -100, 100)
            self.assert_label(
                image, 8, threshold=(3, 6), min_voxels=4, intensity=intensity, msg=dtype.__name__
            )
            volume = cases.random_values(rng, (5, 13, 17), dtype, 0, 3)
            self.assert_label(
                volume,
                26,
                min_voxels=3,
                intensity=cases.random_values(rng, volume.shape, np.int16, -50, 50),
                msg=dtype.__name__,
            )

    def test_label_f32_nan_is_background_and_nan_intensity_gives_nan_sums(self):
        image = np.array([[1, np.nan, 1], [0, 2, np.nan]], np.float32)
        intensity = np.array([[1, 2, np.nan], [4, 5, 6]], np.float32)
        self.assert_label(image, 8, intensity=intensity)
        self.assert_label(image, 4, threshold=(0.5, 3))

    def test_label_adversarial_paths_checkerboards_and_extremes(self):
        rng = np.random.default_rng(3)
        checker = (np.indices((33, 31)).sum(axis=0) % 2).astype(np.uint8)
        for name, image in (
            ("spiral", cases.spiral(61, 67)),
            ("maze", cases.maze(rng, 20, 25)),
            ("serpentine", cases.serpentine(40, 37)),
            ("checker", checker),
            ("empty", np.zeros((9, 8), np.uint16)),
            ("full", np.full((9, 8), 7, np.int16)),
            ("one pixel", np.ones((1, 1), np.uint8)),
        ):
            for connectivity in (4, 8):
                self.assert_label(image, connectivity, msg=f"{name} c={connectivity}")
        checker3 = (np.indices((6, 9, 10)).sum(axis=0) % 2).astype(np.uint8)
        for connectivity in CONNECTIVITIES_3D:
            self.assert_label(checker3, connectivity, msg=f"checker3 c={connectivity}")

    def test_label_real_images_and_a_volume(self):
        for name in ("smarties.png", "pic1.png"):
            image = grey_image(os.path.join(DATA, name))[:160, :200]
            self.assert_label(image, 8, threshold=(0, 120), intensity=image, msg=name)
        z, y, x = np.mgrid[0:12, 0:30, 0:34]
        phantom = np.where((z - 6) ** 2 + (y - 15) ** 2 + (x - 17) ** 2 <= 64, 300, -900)
        phantom = (phantom + np.random.default_rng(4).normal(0, 40, z.shape)).astype(np.int16)
        self.assert_label(phantom, 6, threshold=(-200, 2000), intensity=phantom)

    def test_label_spacing_gives_centroids_in_millimetres(self):
        image = cases.random_mask(np.random.default_rng(5), (5, 9, 11), np.uint8, 0.5)
        proto = cases.image_proto(image)
        proto.spacing.x_mm, proto.spacing.y_mm, proto.spacing.z_mm = 0.5, 0.75, 2.5
        response = self.stub.Label(
            label_pb2.LabelRequest(input=types_pb2.ImageSource(image=proto)), timeout=30
        )
        centroid = np.array(response.regions.centroid).reshape(-1, 3)
        np.testing.assert_array_equal(
            np.array(response.regions.centroid_mm).reshape(-1, 3), centroid * [0.5, 0.75, 2.5]
        )
        self.assertEqual(response.labels.image.spacing.z_mm, 2.5)

    # The segmentation steps.

    def test_fill_holes_equals_binary_fill_holes_on_masks(self):
        rng = np.random.default_rng(6)
        for _, dtype in cases.TYPES:
            for shape, connectivities in (
                ((31, 45), CONNECTIVITIES_2D),
                ((6, 17, 19), CONNECTIVITIES_3D),
            ):
                for connectivity in connectivities:
                    mask = cases.random_mask(rng, shape, dtype, 0.55)
                    filled = cases.ndimage.binary_fill_holes(
                        mask != 0, cases.structure(mask.ndim, connectivity)
                    )
                    expected = np.where(filled, cases.top(dtype), 0).astype(dtype)
                    got = self.morphology(mask, [step(OP.MORPHOLOGY_OP_FILL_HOLES, connectivity)])
                    np.testing.assert_array_equal(
                        got, expected, err_msg=f"{dtype.__name__} c={connectivity}"
                    )

    def test_fill_holes_on_grey_images_equals_reconstruction_by_erosion(self):
        rng = np.random.default_rng(7)
        for _, dtype in cases.TYPES:
            image = cases.random_values(rng, (23, 27), dtype, 0, 40)
            for connectivity in (4, 8):
                got = self.morphology(image, [step(OP.MORPHOLOGY_OP_FILL_HOLES, connectivity)])
                np.testing.assert_array_equal(
                    got, cases.fill_holes(image, connectivity), err_msg=dtype.__name__
                )

    def test_reconstruction_with_a_marker_equals_skimage_and_clamps_the_marker(self):
        rng = np.random.default_rng(8)
        for _, dtype in cases.TYPES:
            for shape, connectivities in (((29, 33), (4, 8)), ((5, 11, 13), (6, 18, 26))):
                for connectivity in connectivities:
                    mask = cases.random_values(rng, shape, dtype, 0, 60)
                    # Above the mask in places: clamped to it first.
                    marker = cases.random_values(rng, shape, dtype, 0, 60)
                    for op, method in (
                        (OP.MORPHOLOGY_OP_RECONSTRUCT_DILATE, "dilation"),
                        (OP.MORPHOLOGY_OP_RECONSTRUCT_ERODE, "erosion"),
                    ):
                        got = self.morphology(mask, [step(op, connectivity)], marker=marker)
                        np.testing.assert_array_equal(
                            got,
                            cases.reconstruct(marker, mask, method, connectivity),
                            err_msg=f"{dtype.__name__} {method} c={connectivity}",
                        )

    def test_hmax_and_hmin_equal_reconstruction_of_the_shifted_image(self):
        rng = np.random.default_rng(9)
        for _, dtype in cases.TYPES:
            image = cases.random_values(rng, (27, 31), dtype, 0, 90)
            for h in (0, 3, 10):
                got = self.morphology(image, [step(OP.MORPHOLOGY_OP_HMAX, 8, h=h)])
                np.testing.assert_array_equal(got, cases.hmax(image, h, 8), err_msg=str(h))
                got = self.morphology(image, [step(OP.MORPHOLOGY_OP_HMIN, 4, h=h)])
                np.testing.assert_array_equal(got, cases.hmin(image, h, 4), err_msg=str(h))
        volume = cases.random_values(rng, (6, 12, 14), np.int16, -50, 50)
        got = self.morphology(volume, [step(OP.MORPHOLOGY_OP_HMAX, 26, h=7)])
        np.testing.assert_array_equal(got, cases.hmax(volume, 7, 26))

    def test_open_and_close_by_reconstruction(self):
        rng = np.random.default_rng(10)
        image = grey_image(os.path.join(DATA, "smarties.png"))[:120, :150]
        for connectivity in (4, 8):
            got = self.morphology(
                image, [step(OP.MORPHOLOGY_OP_OPEN_REC, connectivity, element=box(5))]
            )
            np.testing.assert_array_equal(got, cases.open_rec(image, (5, 5), connectivity))
            got = self.morphology(
                image, [step(OP.MORPHOLOGY_OP_CLOSE_REC, connectivity, element=box(7))]
            )
            np.testing.assert_array_equal(got, cases.close_rec(image, (7, 7), connectivity))
        for _, dtype in cases.TYPES:
            if dtype == np.uint32:
                continue  # elements take the filter types only (test_bad_parameters)
            image = cases.random_values(rng, (21, 25), dtype, 0, 30)
            got = self.morphology(image, [step(OP.MORPHOLOGY_OP_OPEN_REC, 8, element=box(3))])
            np.testing.assert_array_equal(
                got, cases.open_rec(image, (3, 3), 8), err_msg=dtype.__name__
            )

    def test_threshold_remove_small_and_keep_largest(self):
        rng = np.random.default_rng(11)
        for _, dtype in cases.TYPES:
            image = cases.random_values(rng, (30, 34), dtype, 0, 20)
            got = self.morphology(image, [step(OP.MORPHOLOGY_OP_THRESHOLD, lo=5, hi=12)])
            expected = np.where((image >= 5) & (image <= 12), cases.top(dtype), 0).astype(dtype)
            np.testing.assert_array_equal(got, expected, err_msg=dtype.__name__)
            mask = cases.random_mask(rng, (30, 34), dtype, 0.45) // 2 + (image > 10)
            mask = mask.astype(dtype)
            for connectivity in (4, 8):
                got = self.morphology(
                    mask, [step(OP.MORPHOLOGY_OP_REMOVE_SMALL, connectivity, min_voxels=5)]
                )
                np.testing.assert_array_equal(got, cases.remove_small(mask, 5, connectivity))
                got = self.morphology(mask, [step(OP.MORPHOLOGY_OP_KEEP_LARGEST, connectivity)])
                np.testing.assert_array_equal(got, cases.keep_largest(mask, connectivity))
        volume = cases.random_mask(rng, (6, 10, 12), np.uint8, 0.4)
        for connectivity in CONNECTIVITIES_3D:
            got = self.morphology(volume, [step(OP.MORPHOLOGY_OP_KEEP_LARGEST, connectivity)])
            np.testing.assert_array_equal(got, cases.keep_largest(volume, connectivity))

    def test_adversarial_paths_fill_and_reconstruct_exactly(self):
        rng = np.random.default_rng(12)
        # Spiral walls whose corridor opens on the border at one corner only: the flood from the
        # border must travel the whole corridor (about half the image) to reach its end.
        walls = (1 - cases.spiral(63, 71)) * 255
        walls = walls.astype(np.uint8)
        expected = np.where(cases.ndimage.binary_fill_holes(walls != 0), 255, 0).astype(np.uint8)
        got = self.morphology(walls, [step(OP.MORPHOLOGY_OP_FILL_HOLES, 4)])
        np.testing.assert_array_equal(got, expected)
        # Reconstruction from one corner of a maze and of a serpentine: the seed travels every
        # corridor.
        for mask in (cases.maze(rng, 24, 30) * 200, cases.serpentine(45, 51) * 200):
            mask = mask.astype(np.uint16)
            seed = np.zeros_like(mask)
            seed[np.unravel_index(np.argmax(mask), mask.shape)] = 200
            got = self.morphology(mask, [step(OP.MORPHOLOGY_OP_RECONSTRUCT_DILATE, 4)], marker=seed)
            np.testing.assert_array_equal(got, cases.reconstruct(seed, mask, "dilation", 4))
            graded = (mask * rng.integers(1, 4, mask.shape)).astype(np.uint16)
            got = self.morphology(graded, [step(OP.MORPHOLOGY_OP_OPEN_REC, 8, element=box(3))])
            np.testing.assert_array_equal(got, cases.open_rec(graded, (3, 3), 8))

    def test_a_chain_mixes_filters_and_segmentation_steps(self):
        z, y, x = np.mgrid[0:10, 0:40, 0:44]
        ring = (y - 20) ** 2 + (x - 22) ** 2
        ball = ((z - 5) ** 2 + ring <= 49) & (ring > 4)
        volume = np.where(ball, 300, -900).astype(np.int16)
        volume += np.random.default_rng(13).integers(-30, 30, volume.shape).astype(np.int16)
        chain = [
            step(OP.MORPHOLOGY_OP_THRESHOLD, lo=-200, hi=3000),
            morphology_pb2.MorphologyStep(op=OP.MORPHOLOGY_OP_OPEN, element=box(3)),
            step(OP.MORPHOLOGY_OP_FILL_HOLES, 6),
            step(OP.MORPHOLOGY_OP_KEEP_LARGEST, 26),
        ]
        got = self.morphology(volume, chain)
        mask = np.where((volume >= -200) & (volume <= 3000), 32767, 0).astype(np.int16)
        opened = cases.ndimage.grey_dilation(
            cases.ndimage.grey_erosion(mask, size=(1, 3, 3), mode="nearest"),
            size=(1, 3, 3),
            mode="nearest",
        )
        filled = np.where(
            cases.ndimage.binary_fill_holes(opened != 0, cases.structure(3, 6)), 32767, 0
        ).astype(np.int16)
        np.testing.assert_array_equal(got, cases.keep_largest(filled, 26))

    # Streams and resident objects.

    def streamed(self, volume, steps, slab_slices, marker_handle=None):
        header = streaming_pb2.VolumeStreamHeader(
            volume=types_pb2.Image(
                pixel_type=cases.PIXEL_TYPE[volume.dtype],
                width=volume.shape[2],
                height=volume.shape[1],
                depth=volume.shape[0],
            ),
            morphology=morphology_pb2.MorphologyRequest(steps=steps),
        )
        if marker_handle is not None:
            header.morphology.marker.handle = marker_handle

        def messages():
            yield streaming_pb2.VolumeStreamRequest(header=header)
            for z in range(0, volume.shape[0], slab_slices):
                yield streaming_pb2.VolumeStreamRequest(slab=volume[z : z + slab_slices].tobytes())

        data, z = b"", 0
        for reply in self.stub.ProcessVolumeStream(messages(), timeout=120):
            self.assertEqual(reply.z_begin, z)
            z += reply.slices
            data += reply.data
        self.assertEqual(z, volume.shape[0])
        return np.frombuffer(data, volume.dtype).reshape(volume.shape)

    def upload(self, array):
        response = self.stub.Upload(
            iter([resident_pb2.UploadRequest(image=cases.image_proto(array))]), timeout=30
        )
        return response.object.handle

    def test_streamed_global_chains_equal_the_unary_result(self):
        rng = np.random.default_rng(14)
        volume = cases.random_values(rng, (23, 17, 19), np.uint16, 0, 40)
        marker = cases.random_values(rng, volume.shape, np.uint16, 0, 40)
        marker_handle = self.upload(marker)
        chains = [
            [step(OP.MORPHOLOGY_OP_FILL_HOLES, 6)],
            [
                morphology_pb2.MorphologyStep(
                    op=OP.MORPHOLOGY_OP_DILATE,
                    element=morphology_pb2.StructuringElement(
                        shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=3, height=3, depth=3
                    ),
                ),
                step(OP.MORPHOLOGY_OP_HMAX, 26, h=5),
                morphology_pb2.MorphologyStep(op=OP.MORPHOLOGY_OP_ERODE, element=box(3)),
            ],
            [
                step(OP.MORPHOLOGY_OP_THRESHOLD, lo=10, hi=30),
                step(OP.MORPHOLOGY_OP_KEEP_LARGEST, 18),
            ],
            [step(OP.MORPHOLOGY_OP_RECONSTRUCT_DILATE, 6)],
        ]
        for i, chain in enumerate(chains):
            uses_marker = any(s.op == OP.MORPHOLOGY_OP_RECONSTRUCT_DILATE for s in chain)
            unary = self.morphology(volume, chain, marker=marker if uses_marker else None)
            for slab_slices in (1, 4, 23):
                got = self.streamed(
                    volume, chain, slab_slices, marker_handle if uses_marker else None
                )
                np.testing.assert_array_equal(got, unary, err_msg=f"chain {i} slabs {slab_slices}")

    def test_labels_kept_resident_feed_the_mask_steps(self):
        mask = cases.random_mask(np.random.default_rng(15), (4, 21, 25), np.uint8, 0.5)
        response = self.stub.Label(
            label_pb2.LabelRequest(
                input=types_pb2.ImageSource(image=cases.image_proto(mask)),
                connectivity=types_pb2.CONNECTIVITY_26,
                output=types_pb2.OutputOptions(keep_resident=True, omit_data=True),
            ),
            timeout=30,
        )
        self.assertTrue(response.labels.handle)
        self.assertEqual(response.labels.image.pixel_type, types_pb2.PIXEL_TYPE_U32)
        self.assertEqual(response.labels.image.data, b"")
        self.assertEqual(response.labels.image.depth, 4)  # the shape, to read the table by
        labels = cases.label(mask, 26)
        result = self.stub.Morphology(
            morphology_pb2.MorphologyRequest(
                input=types_pb2.ImageSource(handle=response.labels.handle),
                steps=[step(OP.MORPHOLOGY_OP_REMOVE_SMALL, 26, min_voxels=3)],
            ),
            timeout=30,
        )
        np.testing.assert_array_equal(
            cases.from_proto(result.result.image, np.uint32), cases.remove_small(labels, 3, 26)
        )
        again = self.stub.Label(
            label_pb2.LabelRequest(
                input=types_pb2.ImageSource(handle=response.labels.handle),
                connectivity=types_pb2.CONNECTIVITY_26,
            ),
            timeout=30,
        )
        np.testing.assert_array_equal(cases.from_proto(again.labels.image, np.uint32), labels)

    # Refusals.

    def test_bad_parameters_are_refused_naming_the_field(self):
        image = types_pb2.ImageSource(image=cases.image_proto(np.zeros((6, 7), np.uint8)))
        volume = types_pb2.ImageSource(image=cases.image_proto(np.zeros((3, 6, 7), np.uint8)))
        labels = types_pb2.ImageSource(image=cases.image_proto(np.zeros((6, 7), np.uint32)))
        M = morphology_pb2.MorphologyRequest
        cases_ = [
            (M(input=image, steps=[step(OP.MORPHOLOGY_OP_HMAX, h=-1)]), "steps[0].h"),
            (M(input=image, steps=[step(OP.MORPHOLOGY_OP_HMAX, h=float("nan"))]), "steps[0].h"),
            (
                M(
                    input=image,
                    steps=[
                        morphology_pb2.MorphologyStep(
                            op=OP.MORPHOLOGY_OP_FILL_HOLES, connectivity=5
                        )
                    ],
                ),
                "steps[0].connectivity",
            ),
            (
                M(input=image, steps=[step(OP.MORPHOLOGY_OP_FILL_HOLES, 26)]),
                "steps[0].connectivity",
            ),
            (
                M(input=volume, steps=[step(OP.MORPHOLOGY_OP_KEEP_LARGEST, 8)]),
                "steps[0].connectivity",
            ),
            (M(input=image, steps=[step(OP.MORPHOLOGY_OP_THRESHOLD, lo=5, hi=1)]), "steps[0].hi"),
            (
                M(input=image, steps=[step(OP.MORPHOLOGY_OP_FILL_HOLES, element=box(3))]),
                "steps[0].element",
            ),
            (M(input=image, steps=[step(OP.MORPHOLOGY_OP_KEEP_LARGEST, h=2)]), "steps[0].h"),
            (
                M(
                    input=image,
                    steps=[
                        morphology_pb2.MorphologyStep(
                            op=OP.MORPHOLOGY_OP_DILATE,
                            element=box(3),
                            connectivity=types_pb2.CONNECTIVITY_8,
                        )
                    ],
                ),
                "steps[0].connectivity",
            ),
            (M(input=image, steps=[step(OP.MORPHOLOGY_OP_RECONSTRUCT_DILATE)]), "marker"),
            (M(input=image, steps=[step(OP.MORPHOLOGY_OP_FILL_HOLES)], marker=image), "marker"),
            (
                M(
                    input=image,
                    steps=[step(OP.MORPHOLOGY_OP_RECONSTRUCT_ERODE)],
                    marker=types_pb2.ImageSource(
                        image=cases.image_proto(np.zeros((6, 8), np.uint8))
                    ),
                ),
                "marker",
            ),
            (
                M(
                    input=image,
                    steps=[step(OP.MORPHOLOGY_OP_RECONSTRUCT_ERODE)],
                    marker=types_pb2.ImageSource(
                        image=cases.image_proto(np.zeros((6, 7), np.uint16))
                    ),
                ),
                "marker",
            ),
            (
                M(
                    input=labels,
                    steps=[
                        morphology_pb2.MorphologyStep(op=OP.MORPHOLOGY_OP_ERODE, element=box(3))
                    ],
                ),
                "steps[0].op",
            ),
            (
                M(input=labels, steps=[step(OP.MORPHOLOGY_OP_OPEN_REC, element=box(3))]),
                "steps[0].op",
            ),
        ]
        for request, field in cases_:
            self.assert_refused(self.stub.Morphology, request, field)
        L = label_pb2.LabelRequest
        for request, field in [
            (L(input=image, connectivity=6), "connectivity"),
            (L(input=image, connectivity=7), "connectivity"),
            (
                L(input=image, threshold=label_pb2.LabelThreshold(lo=float("nan"), hi=1)),
                "threshold.lo",
            ),
            (L(input=image, threshold=label_pb2.LabelThreshold(lo=2, hi=1)), "threshold.hi"),
            (L(input=image, intensity=volume), "intensity"),
            (
                L(
                    input=image,
                    output=types_pb2.OutputOptions(
                        shared_memory=types_pb2.SharedMemoryTarget(region="r")
                    ),
                ),
                "output.shared_memory",
            ),
        ]:
            self.assert_refused(self.stub.Label, request, field)
        from cuimg.v1 import gradient_pb2

        self.assert_refused(
            self.stub.Gradient,
            gradient_pb2.GradientRequest(input=labels),
            "input.image.pixel_type",
            "UNSUPPORTED_PIXEL_TYPE",
        )


if __name__ == "__main__":
    unittest.main()
