// The client's subcommands. Each takes plain option structs (filled from flags in main.cc) and
// returns the process exit code (connection.h): 0 ok, 1 RPC error (status printed), 2 usage (the
// command line: flags, their values, paths that do not exist, outputs that cannot be written),
// 3 bad input data (a file that exists but does not read as what its name says).
#ifndef CUIMG_CLIENT_COMMANDS_H_
#define CUIMG_CLIENT_COMMANDS_H_

#include <cstdint>
#include <string>

#include "client/commands/dicomweb_staging.h"
#include "client/connection.h"
#include "client/lattice_spec.h"

namespace cuimg {

struct HealthCommand {
  // "" checks the whole server.
  std::string service;
};
int RunHealth(const ConnectionOptions& connection, const HealthCommand& command);

struct MorphologyCommand {
  std::string input;
  std::string output;
  // A chain "op:shape:WxH[xD][:iterations],..."; when empty, one step from the fields below.
  std::string steps;
  std::string op = "dilate";
  std::string shape = "rect";
  std::string size = "3x3";
  // "x,y" or "x,y,z"; empty means the centre.
  std::string anchor;
  int iterations = 1;
  std::string border = "neutral";
  double border_value = 0;
  // A PNG whose non-zero pixels form a custom element (shape "custom").
  std::string mask;
  // The seed image of reconstruct_dilate/reconstruct_erode steps (read as --input is); empty:
  // none.
  std::string marker;
  // NRRD output: gzip-compressed data instead of raw.
  bool nrrd_gzip = false;
  // DICOM input of several series: the one to read; DICOM output: the UID root of new UIDs.
  std::string series_uid;
  std::string uid_root;
  // DICOM series output: "explicit", "htj2k" or "j2k" (stored_frames.h's OutputSyntax).
  std::string output_syntax = "explicit";
  // A compressed DICOM series: sent as its stored frames where the server decodes them.
  bool send_frames = true;
  bool json = false;
  // > 0: stream a one-channel volume in slabs of this many slices (ProcessVolumeStream),
  // split over up to `volume_streams` streams on their own connections.
  int slab_slices = 0;
  int volume_streams = 4;
  // input may be a DICOMweb series URL and output a DICOMweb service URL (dicomweb.h): how to
  // reach the server.
  DicomwebFlags dicomweb;
  // What the report names as the output when `output` is a stand-in for it (a DICOMweb URL's
  // staging folder); empty: `output`.
  std::string output_label;
  // > 0: `input` is a folder of images (PNG, JPEG, TIFF, .npy, NRRD; each channel an image), sent
  // this many to a call (a batch, morphology_batch.cc), each result written to the `output`
  // folder under its file's name.
  int batch = 0;
};
int RunMorphology(const ConnectionOptions& connection, const MorphologyCommand& command);

struct LabelCommand {
  std::string input;
  // The U32 label image (NIfTI, NRRD, .npy or TIFF by extension); empty: not written.
  std::string output;
  // The regions as a JSON table; empty: not written.
  std::string json_out;
  // "4", "8", "6", "18", "26"; empty: the server's default (face connectivity).
  std::string connectivity;
  // "LO:HI": the foreground is [LO, HI]; empty: the non-zero pixels.
  std::string threshold;
  std::int64_t min_voxels = 0;
  // An image of the input's size whose values are measured per region; empty: none.
  std::string intensity;
  // Keep the label image on the server and print its handle.
  bool keep_resident = false;
  // A compressed DICOM series: sent as its stored frames where the server decodes them.
  bool send_frames = true;
  bool nrrd_gzip = false;
  std::string series_uid;
  bool json = false;
};
int RunLabel(const ConnectionOptions& connection, const LabelCommand& command);

struct GradientCommand {
  std::string input;
  // PREFIX_gx.EXT, PREFIX_gy.EXT, PREFIX_magnitude.EXT (f32) and, for 2D input,
  // PREFIX_magnitude.png (a preview).
  std::string output_prefix;
  std::string format = "tiff";  // EXT: tiff, npy, nrrd, nii or nii.gz
  bool nrrd_gzip = false;
  // DICOM input of several series: the one to read.
  std::string series_uid;
  int kernel_length = 7;
  double sigma = 0;
  // A compressed DICOM series sent unary: as its stored frames where the server decodes them.
  bool send_frames = true;
  // > 0: stream a volume in slabs of this many slices (ProcessVolumeStream), split over up to
  // `volume_streams` streams on their own connections.
  int slab_slices = 0;
  int volume_streams = 4;
};
int RunGradient(const ConnectionOptions& connection, const GradientCommand& command);

struct PyramidCommand {
  std::string input;
  std::string output_prefix;  // PREFIX_levelNN.png|tiff, PREFIX_contact_sheet.png
  int levels = 31;
  double ratio = 1.05;
  std::string mode = "from_base";
  std::string format = "png";
};
int RunPyramid(const ConnectionOptions& connection, const PyramidCommand& command);

struct DetectCommand {
  std::string input;   // an image file, or a directory of frames (.png/.jpg, by name)
  std::string video;   // a video file, decoded by the ffmpeg program
  std::string output;  // image: the boxed PNG; directory or video: a directory of boxed PNGs
  std::string model;   // empty: the server's default
  double hit_threshold = 0;
  int win_stride = 0;  // 0: 8
  int padding = 0;
  double scale = 0;                     // 0: 1.05
  int max_levels = 0;                   // 0: 64
  std::string gamma = "model";          // model (its default), on, off
  std::string grouping = "rectangles";  // rectangles (groupRectangles) or none (raw hits)
  int group_threshold = -1;             // < 0: the server's default (2)
  double group_eps = 0;                 // 0: 0.2
  int every = 1;                        // frames: every Nth
  int max_frames = 0;                   // frames: at most this many (0: all)
  // A frame folder: an unreadable file is reported and skipped, the rest processed, and the
  // exit code is 3 at the end; without it the first such file stops the run (3, nothing written).
  bool keep_going = false;
};
// Prints one JSON line per image; exit 1 on the first RPC error.
int RunDetect(const ConnectionOptions& connection, const DetectCommand& command);

struct ModelsCommand {
  bool json = false;
};
int RunModels(const ConnectionOptions& connection, const ModelsCommand& command);

struct DeformCommand {
  std::string input;   // a mesh file (OBJ, PLY, STL, ...) or torus:N,M
  std::string output;  // .obj, .ply or .stl with vertex normals
  std::string lattice_file;
  LatticeControls controls;
  int animate = 0;  // frames against one uploaded mesh
};
int RunDeform(const ConnectionOptions& connection, const DeformCommand& command);

struct MeshCommand {
  int n = 301;
  int m = 301;
  std::string output;
};
int RunMeshTorus(const MeshCommand& command);

struct LoadCommand {
  std::string rpc = "morphology";  // morphology, gradient, pyramid, detect or deform
  // Payload. Image RPCs: `input` (an image or volume file; detect: PNG/JPEG sent encoded), else
  // random pixels of `size` and `pixel_type`; a folder of images: calls cycle through them.
  // deform: `input` is a mesh file or torus:N,M, else the torus of torus_n x torus_m segments.
  std::string input;
  // Image RPCs: calls cycle through this video's frames (decoded by the ffmpeg program), every
  // `every`th up to `max_frames` (0: kMaxVideoFrames).
  std::string video;
  int every = 1;
  int max_frames = 0;
  std::string size = "640x480";  // WxH or WxHxD
  std::string pixel_type = "u8";
  int torus_n = 301;
  int torus_m = 301;
  // Each RPC's parameters, from the flags of its own subcommand (their input/output fields are
  // not used here).
  std::string steps = "dilate:rect:3x3";  // morphology
  GradientCommand gradient;
  PyramidCommand pyramid;
  DetectCommand detect;
  DeformCommand deform;  // lattice_file or controls

  int concurrency = 16;  // calls in flight (closed loop)
  double rate = 0;       // calls per second (open loop) when > 0
  double duration_s = 10;
  std::int64_t requests = 0;  // when > 0: this many calls instead of a duration
  double warmup_s = 1;
  int channels = 1;
  bool json = false;
  std::string json_out;  // also write the JSON summary here
  std::string csv;       // per-call rows
  std::string report;    // .html (self-contained) or .png plots, drawn with matplotlib
  bool progress = true;
  // --rpc morphology: pass pixels through a POSIX shared-memory object registered with the server
  // (same host): the input once, each call's result into its own slot; the RPCs carry no pixels.
  bool shm = false;
  // --rpc detect: the frames go over DetectStream calls, one stream per channel, each frame a
  // call of the run (load_stream.h).
  bool detect_stream = false;
  // Image RPCs: images per call (a batch, the API's `inputs`) when > 0; else one (`input`).
  int batch = 0;
  // The server's Prometheus endpoint (host:port), read once for the report's context (version,
  // backend); empty: the --target host at the server's default port; "none": not read.
  std::string server_metrics;
  // This client's --version text, for the report's context.
  std::string client_build;
};
// Exit 0 when every measured call succeeded, 1 otherwise (the failures are explained on stdout:
// codes and messages), 2 for a usage error or a report that could not be written, 3 for an
// --input file that does not read. SIGINT or SIGTERM stops the run (load_run.h): the summary and
// every requested report are still written, covering the time it ran, and the exit code follows
// the same rules for the calls it made.
int RunLoad(const ConnectionOptions& connection, const LoadCommand& command);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_COMMANDS_H_
