// cuimg: the command-line client. `cuimg <subcommand> [flags]`; `cuimg --help` lists every flag,
// `cuimg <subcommand> --help` that subcommand's.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "client/commands/commands.h"
#include "client/subcommand_flags.h"
#include "cuimg/common/command_line.h"
#include "cuimg/common/lock_order_checks.h"
#include "cuimg/common/malloc_policy.h"

// Connection (every subcommand).
ABSL_FLAG(std::string, target, "localhost:50051",
          "Server address: host:port, dns:///host:port or unix:///path.");
ABSL_FLAG(double, timeout, 60,
          "Per-RPC deadline in seconds (0 = none); also each DICOMweb HTTP request's.");
ABSL_FLAG(std::string, lb_policy, "round_robin",
          "round_robin (spread calls over every address of --target) or pick_first.");
ABSL_FLAG(int, max_attempts, 4,
          "Attempts per call when the server answers UNAVAILABLE, or RESOURCE_EXHAUSTED with a "
          "retry hint, after the hint (1 = no retries; at most 5; load never retries overload).");
ABSL_FLAG(bool, json, false, "Print results as JSON.");
ABSL_FLAG(bool, tls, false, "Connect over TLS, verifying the server against the system's roots.");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA bundle the server's certificate must chain to (implies --tls).");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM client certificate for mutual TLS (with --tls_key_file; implies --tls).");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name the server's certificate must carry, if not the --target host.");
ABSL_FLAG(std::string, token_file, "",
          "File holding a bearer token, sent as \"authorization: Bearer TOKEN\" (needs TLS).");

// health
ABSL_FLAG(std::string, service, "", "health: the service to check (\"\" = whole server).");

// morphology
ABSL_FLAG(
    std::string, input, "",
    "morphology, gradient, label: input image or volume: .png, .jpg, .tif (multi-page: a volume), "
    ".npy (H,W) or (D,H,W), .nrrd/.nhdr, .nii/.nii.gz, a directory holding one DICOM series "
    "(sorted along the slice normal, rescaled to i16) or one DICOM file (.dcm); morphology "
    "also a DICOMweb series, "
    "dicomweb+http(s)://HOST/BASE/studies/STUDY_UID/series/SERIES_UID; pyramid: input "
    "image (.png, .jpg, .tif); "
    "detect: an image or a directory of frames (.png, .jpg, in name order); deform: mesh "
    "file (.obj, .ply, .stl) or torus:N,M; load: the payload of --rpc (an image or volume "
    "as for morphology, a PNG/JPEG for detect sent encoded, a directory of images that calls "
    "cycle through, a mesh or torus:N,M for deform; default: random pixels of --image_size, "
    "or the --n x --m torus). Images are read as OpenCV's imread reads them: a PNG's alpha channel "
    "is dropped, CMYK JPEGs become BGR.");
ABSL_FLAG(std::string, output, "",
          "morphology: output by extension (.png, .jpg, .tif, .npy, .nrrd, .nii[.gz]), or a new "
          "directory for "
          "a derived DICOM series (DICOM input only), or dicomweb+http(s)://HOST/BASE to store it "
          "there with STOW-RS; label: the U32 label image (.nii[.gz], .nrrd, .npy, .tif); detect: "
          "the image with boxes drawn (.png), "
          "or for frames and --video a directory of them; deform, mesh: output mesh (.obj, .ply, "
          ".stl). Outputs appear whole once the command succeeds, or not at all.");
ABSL_FLAG(
    std::string, steps, "",
    "morphology, load: a chain op:shape:WxH[xD][:iterations],... (overrides --op/--shape/--size/"
    "--iterations). ops: erode dilate open close gradient tophat blackhat; shapes: rect "
    "ellipse cross custom. A radius in millimetres may replace WxH[xD]: Rmm, RXxRYmm or "
    "RXxRYxRZmm (e.g. open:ball:5mm), turned into voxels by the server from the input's "
    "spacing and printed. Segmentation steps (C: connectivity 4/8 in 2D, 6/18/26 in 3D, face "
    "when left out): fill_holes[:C], reconstruct_dilate[:C], reconstruct_erode[:C] (with "
    "--marker), open_rec:SHAPE:SIZE[:C], close_rec:SHAPE:SIZE[:C], hmax:H[:C], hmin:H[:C], "
    "threshold:LO:HI, remove_small:N[:C], keep_largest[:C].");
ABSL_FLAG(std::string, op, "dilate", "morphology: the operation (see --steps).");
ABSL_FLAG(std::string, shape, "rect", "morphology: structuring element shape (see --steps).");
ABSL_FLAG(std::string, size, "3x3",
          "morphology: element size WxH (2D) or WxHxD (3D), or a radius in mm (see --steps).");
ABSL_FLAG(std::string, anchor, "", "morphology: element anchor x,y[,z] (default: centre).");
ABSL_FLAG(int, iterations, 1, "morphology: repetitions of the operation.");
ABSL_FLAG(std::string, border, "neutral",
          "morphology: neutral (outside pixels never win) or constant (--border_value).");
ABSL_FLAG(double, border_value, 0, "morphology: outside value for --border constant.");
ABSL_FLAG(std::string, mask, "", "morphology: 8-bit PNG mask for --shape custom.");
ABSL_FLAG(std::string, marker, "",
          "morphology: the seed of reconstruct_dilate/reconstruct_erode steps, an image or volume "
          "of the input's size and type (read as --input).");

// label
ABSL_FLAG(std::string, connectivity, "",
          "label: 4 or 8 (2D), 6, 18 or 26 (3D); empty: face connectivity (4 / 6).");
ABSL_FLAG(std::string, threshold, "",
          "label: LO:HI, the foreground is the pixels in [LO, HI]; empty: the non-zero pixels.");
ABSL_FLAG(int64_t, min_voxels, 0, "label: drop components of fewer voxels before numbering.");
ABSL_FLAG(std::string, intensity, "",
          "label: an image of the input's size whose values are measured per region (min, max, "
          "mean, sum in --json_out).");
ABSL_FLAG(bool, keep_resident, false,
          "label: keep the label image on the server (a U32 mask for morphology's segmentation "
          "steps) and print its handle.");
ABSL_FLAG(int, slab_slices, 0,
          "morphology, gradient: stream a volume (e.g. a multi-page TIFF) in slabs of this many "
          "slices through ProcessVolumeStream (0 = one unary request).");
ABSL_FLAG(int, volume_streams, 4,
          "morphology, gradient with --slab_slices: streams (each on its own connection) that "
          "carry parts of the volume at once; one stream moves about 1 GB/s.");
ABSL_FLAG(bool, nrrd_gzip, false, "morphology, gradient: gzip the data of .nrrd outputs.");
ABSL_FLAG(std::string, series_uid, "",
          "morphology, gradient: read this SeriesInstanceUID from a DICOM directory of several.");
ABSL_FLAG(std::string, uid_root, "",
          "morphology: the organisation's UID root for a derived DICOM series' new UIDs (at most "
          "40 digits and dots; DCMTK's site root when empty).");
ABSL_FLAG(std::string, output_syntax, "explicit",
          "morphology, DICOM series out: explicit, htj2k (HTJ2K lossless .201, encoded by the "
          "server where it can, else here) or j2k (JPEG 2000 lossless .90, encoded here).");
ABSL_FLAG(bool, send_frames, true,
          "morphology, gradient, label: send a compressed DICOM series as its stored frames to a "
          "server that decodes its syntax (GetServerInfo); false: decode it here, send pixels.");

// gradient, pyramid
ABSL_FLAG(std::string, output_prefix, "",
          "gradient, pyramid: output path prefix (e.g. out/frame -> out/frame_gx.tiff).");
ABSL_FLAG(int, kernel_length, 7, "gradient, load --rpc gradient: taps per 1D kernel (odd, 3..31).");
ABSL_FLAG(
    double, sigma, 0,
    "gradient, load --rpc gradient: Gaussian sigma in pixels (0 = OpenCV's rule: 1.4 for 7).");
ABSL_FLAG(int, levels, 31, "pyramid, load --rpc pyramid: levels (each 1/ratio the last's size).");
ABSL_FLAG(double, ratio, 1.05, "pyramid, load --rpc pyramid: scale between levels.");
ABSL_FLAG(std::string, mode, "from_base", "pyramid, load --rpc pyramid: from_base or cascaded.");
ABSL_FLAG(std::string, format, "",
          "pyramid: level files as png (previews, the default) or tiff (f32); gradient: gx/gy "
          "files as tiff (the default), npy, nrrd, nii or nii.gz.");

// detect, models (the detect parameters also serve load --rpc detect)
ABSL_FLAG(std::string, video, "",
          "detect, load: a video file instead of --input; its frames are decoded by the ffmpeg "
          "program (Debian package ffmpeg).");
ABSL_FLAG(std::string, model, "",
          "detect: detector model name (cuimg models lists them; empty: opencv_people_64x128).");
ABSL_FLAG(double, hit_threshold, 0, "detect: windows scoring at least this are hits.");
ABSL_FLAG(int, win_stride, 0, "detect: window step in pixels, a multiple of 8 (0 = 8).");
ABSL_FLAG(int, padding, 0, "detect: pixels added around each level (rounded up to 8).");
ABSL_FLAG(double, scale, 0, "detect: scale between pyramid levels, in (1, 4] (0 = 1.05).");
ABSL_FLAG(int, max_levels, 0, "detect: at most this many pyramid levels (0 = 64).");
ABSL_FLAG(std::string, gamma, "model", "detect: sqrt gamma: model (its default), on or off.");
ABSL_FLAG(std::string, grouping, "rectangles",
          "detect: rectangles (OpenCV groupRectangles) or none (every window hit).");
ABSL_FLAG(int, group_threshold, -1,
          "detect: clusters of at most this many hits are dropped (-1 = the server's 2).");
ABSL_FLAG(double, group_eps, 0, "detect: groupRectangles' eps (0 = 0.2).");
ABSL_FLAG(int, every, 1, "detect, load --video: frames: process every Nth frame.");
ABSL_FLAG(int, max_frames, 0, "detect, load --video: stop after N frames (0 = all; load: 100).");
ABSL_FLAG(
    bool, keep_going, false,
    "detect: a folder of frames: report an unreadable file, go on with the others, and exit 3 "
    "at the end (without it the first stops the run with exit 3, nothing written).");

// deform, mesh (the lattice flags also serve load --rpc deform)
ABSL_FLAG(std::string, lattice_file, "",
          "deform: lattice JSON {origin, s, t, u, counts, displacements} (default: the mesh's "
          "bounding box with --lattice_counts, --twist, --bulge).");
ABSL_FLAG(std::string, lattice_counts, "3x3x3", "deform: control points per axis, SxTxU.");
ABSL_FLAG(double, twist, 0, "deform: twist about the lattice's u axis, degrees end to end.");
ABSL_FLAG(double, bulge, 0, "deform: push the lattice's middle outward by this fraction.");
ABSL_FLAG(int, animate, 0,
          "deform: upload the mesh once and send this many lattices against its handle "
          "(twist swinging back and forth); prints frames per second.");
ABSL_FLAG(int, n, 301, "mesh torus, load --rpc deform: segments around the ring.");
ABSL_FLAG(int, m, 301, "mesh torus, load --rpc deform: segments around the tube.");

// load
ABSL_FLAG(std::string, rpc, "morphology",
          "load: the RPC to drive: morphology (--steps), gradient (--kernel_length, --sigma), "
          "pyramid (--levels, --ratio, --mode), detect (--model and the other detect flags) or "
          "deform (--lattice_file or --lattice_counts/--twist/--bulge); payload: see --input.");
ABSL_FLAG(std::string, image_size, "640x480",
          "load: random image size WxH (or WxHxD) sent with every call, unless --input.");
ABSL_FLAG(std::string, pixel_type, "u8", "load: u8, u16, i16 or f32 (detect: u8).");
ABSL_FLAG(int, concurrency, 16, "load: calls in flight (closed loop).");
ABSL_FLAG(double, rate, 0, "load: calls per second, open loop (0 = closed loop).");
ABSL_FLAG(double, duration, 10, "load: measured seconds (after --warmup).");
ABSL_FLAG(int64_t, requests, 0,
          "load: measure this many calls (after the --warmup seconds) instead of --duration.");
ABSL_FLAG(double, warmup, 1,
          "load: seconds of calls first, excluded from the statistics (counted apart).");
ABSL_FLAG(int, channels, 1, "load: gRPC channels (separate connections).");
ABSL_FLAG(std::string, json_out, "",
          "load: also write the JSON summary to this file; label: the regions' JSON table.");
ABSL_FLAG(std::string, csv, "", "load: write one CSV row per call to this file.");
ABSL_FLAG(std::string, report, "",
          "load: write plots of the run (latency histogram, throughput and p50/p99 latency per "
          "second) to FILE.html (self-contained page with the summary) or FILE.png; needs python3 "
          "with matplotlib (Debian python3-matplotlib).");
ABSL_FLAG(bool, progress, true, "load: print a live progress line on stderr.");
ABSL_FLAG(std::string, server_metrics, "",
          "load: the server's metrics endpoint host:port, read for the report's context (server "
          "version, backend); empty: the --target host at port 9464; none: skip.");
ABSL_FLAG(bool, detect_stream, false,
          "load: with --rpc detect, send the frames over DetectStream calls (one stream per "
          "--channels, --concurrency frames unanswered over them) instead of unary calls.");
ABSL_FLAG(int, batch, 0, "morphology --input=DIR, load: images per call (a batch; 0: none).");
ABSL_FLAG(bool, shm, false,
          "load: pass pixels through a POSIX shared-memory object registered with the server "
          "(same host; the server needs --shared_memory): the RPCs carry no pixels.");

// DICOMweb (morphology's --input/--output as dicomweb+http(s):// URLs)
ABSL_FLAG(std::string, dicomweb_token_file, "",
          "morphology: file holding a bearer token for the DICOMweb server (sent as "
          "\"Authorization: Bearer TOKEN\"; https, or http to this machine only).");
ABSL_FLAG(std::string, dicomweb_user, "",
          "morphology: DICOMweb basic-authentication user; the password comes from "
          "--dicomweb_password_file, else the CUIMG_DICOMWEB_PASSWORD environment variable.");
ABSL_FLAG(std::string, dicomweb_password_file, "",
          "morphology: file holding the --dicomweb_user password.");
ABSL_FLAG(std::string, dicomweb_ca_file, "",
          "morphology: PEM CA bundle the https DICOMweb server's certificate must chain to "
          "(default: the system's roots).");
ABSL_FLAG(int, dicomweb_max_instances, 4096,
          "morphology: refuse a DICOMweb series of more instances than this.");
ABSL_FLAG(int64_t, dicomweb_max_bytes, int64_t{3} << 30,
          "morphology: refuse a DICOMweb series of more bytes than this (retrieved or stored).");

namespace {

constexpr char kUsage[] =
    "cuimg <subcommand> [flags]\n"
    "subcommands:\n"
    "  health       grpc.health.v1 check; exit 0 when SERVING\n"
    "  morphology   erode/dilate/open/close/gradient/tophat/blackhat an image; segmentation\n"
    "               steps: fill_holes, reconstruction, hmax/hmin, threshold, clean-up\n"
    "  label        connected components: a U32 label image and a JSON table of regions\n"
    "  gradient     Gaussian-derivative gradients (f32 TIFF) and a magnitude preview\n"
    "  pyramid      a multi-level bilinear pyramid and a contact sheet\n"
    "  detect       pedestrians (HOG + SVM) in an image, frames or a video: JSON boxes, PNGs\n"
    "  models       the detector models the server loaded (--json)\n"
    "  deform       free-form deformation of a mesh, with normals (--animate for fps)\n"
    "  mesh torus   write the reference torus mesh\n"
    "  load         load-test the server with one RPC (--rpc): throughput, latency, reports\n"
    "exit codes: 0 ok, 1 RPC error (status printed), 2 usage (unknown flags, bad values, missing\n"
    "arguments or paths, outputs that cannot be written), 3 bad input data (a file cuimg cannot\n"
    "read: bad header, undecodable pixels, values out of range; the message names it)\n"
    "`cuimg <subcommand> --help` lists the subcommand's flags; --version the build\n";

// --help (of the client or of a subcommand), --helpfull, --version: print to stdout and exit 0
// (the exit code), else -1.
int HandleUsage(int argc, char** argv) {
  const cuimg::UsageRequest request = cuimg::FindUsageRequest(argc, argv);
  if (request == cuimg::UsageRequest::kNone) return -1;
  if (request == cuimg::UsageRequest::kVersion) {
    std::printf("%s", cuimg::VersionText("cuimg").c_str());
    return 0;
  }
  if (request == cuimg::UsageRequest::kHelpFull) {
    std::printf("%s%s", kUsage, cuimg::DescribeAllFlags().c_str());
    return 0;
  }
  std::vector<std::string> names;
  for (const auto& [name, flags] : cuimg::SubcommandFlagNames()) names.push_back(name);
  const std::string subcommand = cuimg::FindArgument(argc, argv, names);
  if (subcommand.empty()) {
    std::printf("%s\nflags:\n%s", kUsage, cuimg::DescribeFlagsDefinedIn(__FILE__).c_str());
    return 0;
  }
  for (const auto& [name, flags] : cuimg::SubcommandFlagNames()) {
    if (name != subcommand) continue;
    std::printf("usage: cuimg %s [flags]\n\n%s flags:\n%s",
                name == "mesh" ? "mesh torus" : name.c_str(), name.c_str(),
                cuimg::DescribeFlags(flags).c_str());
    if (name != "mesh") {
      std::printf("\nconnection flags:\n%s",
                  cuimg::DescribeFlags(cuimg::ConnectionFlagNames()).c_str());
    }
  }
  return 0;
}

// Each RPC's parameters, shared by its subcommand and `load --rpc`.
cuimg::GradientCommand GradientFlags() {
  cuimg::GradientCommand command;
  command.kernel_length = absl::GetFlag(FLAGS_kernel_length);
  command.sigma = absl::GetFlag(FLAGS_sigma);
  return command;
}

cuimg::PyramidCommand PyramidFlags() {
  cuimg::PyramidCommand command;
  command.levels = absl::GetFlag(FLAGS_levels);
  command.ratio = absl::GetFlag(FLAGS_ratio);
  command.mode = absl::GetFlag(FLAGS_mode);
  return command;
}

cuimg::DetectCommand DetectFlags() {
  cuimg::DetectCommand command;
  command.model = absl::GetFlag(FLAGS_model);
  command.hit_threshold = absl::GetFlag(FLAGS_hit_threshold);
  command.win_stride = absl::GetFlag(FLAGS_win_stride);
  command.padding = absl::GetFlag(FLAGS_padding);
  command.scale = absl::GetFlag(FLAGS_scale);
  command.max_levels = absl::GetFlag(FLAGS_max_levels);
  command.gamma = absl::GetFlag(FLAGS_gamma);
  command.grouping = absl::GetFlag(FLAGS_grouping);
  command.group_threshold = absl::GetFlag(FLAGS_group_threshold);
  command.group_eps = absl::GetFlag(FLAGS_group_eps);
  return command;
}

cuimg::DeformCommand DeformFlags() {
  cuimg::DeformCommand command;
  command.lattice_file = absl::GetFlag(FLAGS_lattice_file);
  command.controls.counts = absl::GetFlag(FLAGS_lattice_counts);
  command.controls.twist_degrees = absl::GetFlag(FLAGS_twist);
  command.controls.bulge = absl::GetFlag(FLAGS_bulge);
  return command;
}

}  // namespace

int main(int argc, char** argv) {
  // A volume's response arrives in buffers gRPC allocates: huge pages fault them in faster.
  cuimg::ExecWithHugePageMalloc(argv);
  if (const int code = HandleUsage(argc, argv); code >= 0) return code;
  absl::SetProgramUsageMessage(kUsage);
  // `cuimg load`'s threads would otherwise queue on one global spinlock in every gRPC lock.
  cuimg::SetLockOrderChecks(false);
  // Unknown flags and bad values are usage errors (2); Abseil's parser would exit 1.
  if (absl::Status flags = cuimg::CheckFlags(argc, argv); !flags.ok()) {
    std::fprintf(stderr, "usage: %s\n", std::string(flags.message()).c_str());
    return cuimg::kExitUsage;
  }
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() == 3 && std::string(args[1]) == "mesh" && std::string(args[2]) == "torus") {
    cuimg::MeshCommand command;
    command.n = absl::GetFlag(FLAGS_n);
    command.m = absl::GetFlag(FLAGS_m);
    command.output = absl::GetFlag(FLAGS_output);
    return cuimg::RunMeshTorus(command);
  }
  if (args.size() != 2) {
    std::fprintf(stderr, "%s", kUsage);
    return cuimg::kExitUsage;
  }
  const std::string subcommand = args[1];
  cuimg::ConnectionOptions connection;
  connection.target = absl::GetFlag(FLAGS_target);
  connection.timeout_seconds = absl::GetFlag(FLAGS_timeout);
  connection.lb_policy = absl::GetFlag(FLAGS_lb_policy);
  connection.max_attempts = absl::GetFlag(FLAGS_max_attempts);
  connection.tls = absl::GetFlag(FLAGS_tls);
  connection.tls_ca_file = absl::GetFlag(FLAGS_tls_ca_file);
  connection.tls_cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  connection.tls_key_file = absl::GetFlag(FLAGS_tls_key_file);
  connection.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  connection.token_file = absl::GetFlag(FLAGS_token_file);
  if (absl::StatusOr<cuimg::SecurityMaterial> security = cuimg::LoadSecurity(connection);
      !security.ok()) {
    std::fprintf(stderr, "usage: %s\n", std::string(security.status().message()).c_str());
    return cuimg::kExitUsage;
  }

  if (subcommand == "health") {
    cuimg::HealthCommand command;
    command.service = absl::GetFlag(FLAGS_service);
    return cuimg::RunHealth(connection, command);
  }
  if (subcommand == "morphology") {
    cuimg::MorphologyCommand command;
    command.input = absl::GetFlag(FLAGS_input);
    command.output = absl::GetFlag(FLAGS_output);
    command.steps = absl::GetFlag(FLAGS_steps);
    command.op = absl::GetFlag(FLAGS_op);
    command.shape = absl::GetFlag(FLAGS_shape);
    command.size = absl::GetFlag(FLAGS_size);
    command.anchor = absl::GetFlag(FLAGS_anchor);
    command.iterations = absl::GetFlag(FLAGS_iterations);
    command.border = absl::GetFlag(FLAGS_border);
    command.border_value = absl::GetFlag(FLAGS_border_value);
    command.mask = absl::GetFlag(FLAGS_mask);
    command.marker = absl::GetFlag(FLAGS_marker);
    command.nrrd_gzip = absl::GetFlag(FLAGS_nrrd_gzip);
    command.series_uid = absl::GetFlag(FLAGS_series_uid);
    command.uid_root = absl::GetFlag(FLAGS_uid_root);
    command.output_syntax = absl::GetFlag(FLAGS_output_syntax);
    command.send_frames = absl::GetFlag(FLAGS_send_frames);
    command.json = absl::GetFlag(FLAGS_json);
    command.slab_slices = absl::GetFlag(FLAGS_slab_slices);
    command.volume_streams = absl::GetFlag(FLAGS_volume_streams);
    command.batch = absl::GetFlag(FLAGS_batch);
    command.dicomweb.token_file = absl::GetFlag(FLAGS_dicomweb_token_file);
    command.dicomweb.user = absl::GetFlag(FLAGS_dicomweb_user);
    command.dicomweb.password_file = absl::GetFlag(FLAGS_dicomweb_password_file);
    command.dicomweb.ca_file = absl::GetFlag(FLAGS_dicomweb_ca_file);
    command.dicomweb.timeout_seconds = absl::GetFlag(FLAGS_timeout);  // per HTTP request
    if (absl::GetFlag(FLAGS_dicomweb_max_instances) < 1 ||
        absl::GetFlag(FLAGS_dicomweb_max_bytes) < 1) {
      std::fprintf(stderr,
                   "usage: --dicomweb_max_instances and --dicomweb_max_bytes must be >= 1\n");
      return cuimg::kExitUsage;
    }
    command.dicomweb.max_instances =
        static_cast<std::size_t>(absl::GetFlag(FLAGS_dicomweb_max_instances));
    command.dicomweb.max_bytes =
        static_cast<std::uint64_t>(absl::GetFlag(FLAGS_dicomweb_max_bytes));
    return cuimg::RunMorphology(connection, command);
  }
  if (subcommand == "label") {
    cuimg::LabelCommand command;
    command.input = absl::GetFlag(FLAGS_input);
    command.output = absl::GetFlag(FLAGS_output);
    command.json_out = absl::GetFlag(FLAGS_json_out);
    command.connectivity = absl::GetFlag(FLAGS_connectivity);
    command.threshold = absl::GetFlag(FLAGS_threshold);
    command.min_voxels = absl::GetFlag(FLAGS_min_voxels);
    command.intensity = absl::GetFlag(FLAGS_intensity);
    command.keep_resident = absl::GetFlag(FLAGS_keep_resident);
    command.send_frames = absl::GetFlag(FLAGS_send_frames);
    command.nrrd_gzip = absl::GetFlag(FLAGS_nrrd_gzip);
    command.series_uid = absl::GetFlag(FLAGS_series_uid);
    command.json = absl::GetFlag(FLAGS_json);
    return cuimg::RunLabel(connection, command);
  }
  if (subcommand == "gradient") {
    cuimg::GradientCommand command = GradientFlags();
    command.input = absl::GetFlag(FLAGS_input);
    command.send_frames = absl::GetFlag(FLAGS_send_frames);
    command.output_prefix = absl::GetFlag(FLAGS_output_prefix);
    if (!absl::GetFlag(FLAGS_format).empty()) command.format = absl::GetFlag(FLAGS_format);
    command.nrrd_gzip = absl::GetFlag(FLAGS_nrrd_gzip);
    command.series_uid = absl::GetFlag(FLAGS_series_uid);
    command.slab_slices = absl::GetFlag(FLAGS_slab_slices);
    command.volume_streams = absl::GetFlag(FLAGS_volume_streams);
    return cuimg::RunGradient(connection, command);
  }
  if (subcommand == "pyramid") {
    cuimg::PyramidCommand command = PyramidFlags();
    command.input = absl::GetFlag(FLAGS_input);
    command.output_prefix = absl::GetFlag(FLAGS_output_prefix);
    if (!absl::GetFlag(FLAGS_format).empty()) command.format = absl::GetFlag(FLAGS_format);
    return cuimg::RunPyramid(connection, command);
  }
  if (subcommand == "detect") {
    cuimg::DetectCommand command = DetectFlags();
    command.input = absl::GetFlag(FLAGS_input);
    command.video = absl::GetFlag(FLAGS_video);
    command.output = absl::GetFlag(FLAGS_output);
    command.every = absl::GetFlag(FLAGS_every);
    command.max_frames = absl::GetFlag(FLAGS_max_frames);
    command.keep_going = absl::GetFlag(FLAGS_keep_going);
    return cuimg::RunDetect(connection, command);
  }
  if (subcommand == "models") {
    cuimg::ModelsCommand command;
    command.json = absl::GetFlag(FLAGS_json);
    return cuimg::RunModels(connection, command);
  }
  if (subcommand == "deform") {
    cuimg::DeformCommand command = DeformFlags();
    command.input = absl::GetFlag(FLAGS_input);
    command.output = absl::GetFlag(FLAGS_output);
    command.animate = absl::GetFlag(FLAGS_animate);
    return cuimg::RunDeform(connection, command);
  }
  if (subcommand == "load") {
    connection.retry_overload = false;  // it measures the refusals
    cuimg::LoadCommand command;
    command.rpc = absl::GetFlag(FLAGS_rpc);
    command.steps = absl::GetFlag(FLAGS_steps).empty() ? command.steps : absl::GetFlag(FLAGS_steps);
    command.gradient = GradientFlags();
    command.pyramid = PyramidFlags();
    command.detect = DetectFlags();
    command.deform = DeformFlags();
    command.torus_n = absl::GetFlag(FLAGS_n);
    command.torus_m = absl::GetFlag(FLAGS_m);
    command.size = absl::GetFlag(FLAGS_image_size);
    command.pixel_type = absl::GetFlag(FLAGS_pixel_type);
    command.input = absl::GetFlag(FLAGS_input);
    command.video = absl::GetFlag(FLAGS_video);
    command.every = absl::GetFlag(FLAGS_every);
    command.max_frames = absl::GetFlag(FLAGS_max_frames);
    command.server_metrics = absl::GetFlag(FLAGS_server_metrics);
    command.client_build = cuimg::VersionText("cuimg");
    command.concurrency = absl::GetFlag(FLAGS_concurrency);
    command.rate = absl::GetFlag(FLAGS_rate);
    command.duration_s = absl::GetFlag(FLAGS_duration);
    command.requests = absl::GetFlag(FLAGS_requests);
    command.warmup_s = absl::GetFlag(FLAGS_warmup);
    command.channels = absl::GetFlag(FLAGS_channels);
    command.json = absl::GetFlag(FLAGS_json);
    command.json_out = absl::GetFlag(FLAGS_json_out);
    command.csv = absl::GetFlag(FLAGS_csv);
    command.report = absl::GetFlag(FLAGS_report);
    command.progress = absl::GetFlag(FLAGS_progress) && !command.json;
    command.shm = absl::GetFlag(FLAGS_shm);
    command.batch = absl::GetFlag(FLAGS_batch);
    command.detect_stream = absl::GetFlag(FLAGS_detect_stream);
    return cuimg::RunLoad(connection, command);
  }
  std::fprintf(stderr, "unknown subcommand '%s'\n%s", subcommand.c_str(), kUsage);
  return cuimg::kExitUsage;
}
