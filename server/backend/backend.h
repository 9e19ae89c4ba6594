// Backends execute validated jobs on host buffers (or on images a backend already holds on a
// device: device_jpeg.h): CUDA on GPUs, or the CPU reference where there is none. The service
// never sees CUDA.
#ifndef CUIMG_SERVER_BACKEND_H_
#define CUIMG_SERVER_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/gradient_types.h"
#include "cuimg/kernels/hog_types.h"
#include "cuimg/kernels/mesh.h"
#include "cuimg/kernels/morphology_types.h"
#include "cuimg/kernels/pyramid_types.h"
#include "cuimg/kernels/segmentation_types.h"
#include "server/backend/device_jpeg.h"
#include "server/backend/host_buffer.h"
#include "server/backend/packed_pieces.h"
#include "server/observability/stage_times.h"
#include "server/server_options.h"

namespace cuimg {

// What one device reports for health and metrics.
struct DeviceStatus {
  int id = 0;
  std::string label;  // "cuda0", "cpu0", ...
  bool healthy = true;
  std::string reason;  // why not healthy
  std::uint64_t requests = 0;
  int inflight = 0;
  int streams_busy = 0;
  int streams_total = 0;
  // Device memory; absent (has_memory false) for CPU devices.
  bool has_memory = false;
  std::uint64_t memory_total = 0;
  std::uint64_t memory_used = 0;
  std::uint64_t memory_cached = 0;  // idle buffers held by the cache
  std::uint64_t cache_hits = 0;
  std::uint64_t cache_misses = 0;
  std::uint64_t cache_evictions = 0;
  // Pinned host staging pool (CUDA only): chunks leased and idle, leases by outcome.
  std::uint64_t staging_used = 0;
  std::uint64_t staging_cached = 0;
  std::uint64_t staging_hits = 0;
  std::uint64_t staging_misses = 0;
  std::uint64_t staging_refusals = 0;
};

// Host buffers of a gradient: extent.Pixels() floats each; magnitude/angle null unless asked for.
struct GradientOutputs {
  float* gx = nullptr;
  float* gy = nullptr;
  float* magnitude = nullptr;
  float* angle = nullptr;
};

// A mesh held by a backend (device memory on the CUDA backend): created by UploadMesh, used by
// Deform, kept in the resident store. Immutable once created.
class BackendMesh {
 public:
  virtual ~BackendMesh() = default;
  virtual std::size_t vertex_count() const = 0;
  virtual std::size_t triangle_count() const = 0;
  // Bytes held (device memory on the CUDA backend).
  virtual std::size_t bytes() const = 0;
  // The device holding it (the slot id; -1 for none).
  virtual int device() const = 0;
};

// Host memory page-locked for a backend's devices while this object lives (see
// Backend::PinHostMemory).
class HostMemoryPin {
 public:
  virtual ~HostMemoryPin() = default;
};

// Every work call (Morphology, Label, Gradient, Pyramid, DetectPedestrians, Deform) takes its
// request's CancelToken and, once the token stops, returns its status (UNAVAILABLE, CANCELLED or
// DEADLINE_EXCEEDED) instead of finishing: the CPU backend looks between steps, iterations, levels
// and bands of rows (every few milliseconds of work at most), the CUDA backend before each
// device call and between the steps of chains on images of a megapixel or more (it synchronizes
// there, so that a step it has not launched is never queued behind a stopped one).
class Backend {
 public:
  virtual ~Backend() = default;
  // "cuda" or "cpu".
  virtual absl::string_view name() const = 0;
  // One line for the start-up log: devices, memory.
  virtual std::string Describe() const = 0;
  // Every device's health and counters. Thread-safe.
  virtual std::vector<DeviceStatus> Devices() const = 0;

  // Runs a morphology chain. `in` and `out` are host buffers of the same type and extent, one
  // channel; `out` is preallocated and must not overlap `in`, unless it is `in` itself (the
  // same data) where MorphologyWritesOverInput() says so. `marker`: the seed of the
  // reconstruction steps, host memory of `in`'s type and extent, one channel, not overlapping
  // `out`; required when a step reads it (UsesMarker), else null. Thread-safe. Fills the h2d,
  // kernel, d2h and device fields of `times`. In every work call, an `in` held on a device
  // (InputImage::device, only ever this backend's own) is used there without a copy (h2d 0).
  virtual absl::Status Morphology(const InputImage& in, const ImageView& out,
                                  const std::vector<MorphologyStep>& steps, const ImageView* marker,
                                  StageTimes* times, const CancelToken& cancel) = 0;
  // Whether Morphology takes `out` == `in`: true where every input byte is read (copied to the
  // device) before any result byte is written, so that a unary result can be written into its
  // request's buffer rather than a second one as large (DetachedResults::TakeRequestPixels).
  virtual bool MorphologyWritesOverInput() const { return false; }

  // Connected components of a one-channel image or volume of any pixel type (`in`), by a spec
  // that suits it (ValidateLabelSpec): the labels (0 = background, regions 1..N numbered as
  // scipy.ndimage.label numbers them) into `labels`, preallocated host memory of U32 and `in`'s
  // extent, and one RegionStats per region in label order (label_types.h's definitions), with
  // min, max, sum and mean of `intensity` (host memory, one channel of any type and `in`'s
  // extent; null: none). The CPU and CUDA backends return the same labels and statistics bit for
  // bit. Thread-safe.
  virtual absl::StatusOr<std::vector<RegionStats>> Label(const InputImage& in,
                                                         const LabelSpec& spec,
                                                         const ImageView* intensity,
                                                         const ImageView& labels, StageTimes* times,
                                                         const CancelToken& cancel) = 0;

  // Gradients of a one-channel image or volume (slice by slice) into host buffers. Thread-safe.
  virtual absl::Status Gradient(const InputImage& in, const GradientSpec& spec,
                                const GradientOutputs& out, StageTimes* times,
                                const CancelToken& cancel) = 0;

  // Every level of the pyramid of a one-channel 2D image, laid out as PlanPyramidLevels packs
  // them, into host memory in pieces: each level lies wholly inside one piece of `out` (the
  // padding between levels may lie outside them all), and no piece reaches past
  // PyramidOutputBytes. INTERNAL otherwise. Thread-safe.
  virtual absl::Status Pyramid(const InputImage& in, const PyramidSpec& spec,
                               const std::vector<PackedPiece>& out, StageTimes* times,
                               const CancelToken& cancel) = 0;

  // HOG + linear SVM detection on a 2D U8 image of 1, 3 or 4 channels (`in`) with a
  // validated model and spec: the levels and windows (PlanDetection) and every window hit, in
  // HitOrder (grouping is the caller's, the same for every backend). Thread-safe.
  virtual absl::StatusOr<DetectResult> DetectPedestrians(const InputImage& in,
                                                         const HogModel& model,
                                                         const DetectSpec& spec, StageTimes* times,
                                                         const CancelToken& cancel) = 0;

  // Copies a validated mesh into the backend (on the CUDA backend: to the least-loaded healthy
  // device, with the vertex->face adjacency built). RESOURCE_EXHAUSTED when memory runs out.
  virtual absl::StatusOr<std::shared_ptr<const BackendMesh>> UploadMesh(const MeshView& mesh,
                                                                        StageTimes* times) = 0;
  // Deforms `mesh` by a validated lattice. `positions`/`normals` are host buffers of
  // vertex_count * 3 floats, or null when not wanted (not both). When `keep` is not null it
  // receives the deformed mesh (same triangles) held by the backend.
  virtual absl::Status Deform(const BackendMesh& mesh, const Lattice& lattice,
                              DeformOutputs outputs, float* positions, float* normals,
                              std::shared_ptr<const BackendMesh>* keep, StageTimes* times,
                              const CancelToken& cancel) = 0;
  // The mesh's positions and triangles back on the host.
  virtual absl::StatusOr<Mesh> DownloadMesh(const BackendMesh& mesh) = 0;

  // Page-locks `bytes` of host memory at `data` for every device, so that copies from and to it
  // skip staging, until the returned pin is destroyed (which must happen before the memory is
  // unmapped). Null where the backend copies nothing (CPU). An error leaves the memory pageable;
  // it stays usable. Thread-safe.
  virtual absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(void* data,
                                                                       std::size_t bytes) = 0;

  // `bytes` of host memory for a message's pixels: page-locked on the CUDA backend while its
  // message pool has room (copies to and from it are then single DMAs), else from the heap. The
  // buffer may outlive the backend (gRPC frees a sent response when it is done with it).
  // Thread-safe.
  virtual std::unique_ptr<HostBuffer> AllocateHostBuffer(std::size_t bytes) = 0;
  // Where AllocateHostBuffer's memory comes from, for metrics. Thread-safe.
  virtual HostBufferPoolStats HostBufferPool() const = 0;

  // The GPU JPEG decoder, or null when this backend has none (the CPU backend; the CUDA backend
  // without nvJPEG or with --jpeg_decoder=cpu). Lives as long as the backend.
  virtual DeviceJpegDecoder* jpeg_decoder() { return nullptr; }
  // The backend's GPU decoder of DICOM frames (nvJPEG2000), or null (the CPU backend, or no
  // library): frames then decode on the host.
  virtual DeviceFrameDecoder* frame_decoder() { return nullptr; }
};

// The CPU backend: the CPU references, options.cpu_threads_per_request threads per request (0 =
// all cores), presenting options.cpu_devices devices for scheduling.
std::unique_ptr<Backend> CreateCpuBackend(const ServerOptions& options);

// The CUDA backend over every usable device; UNAVAILABLE when there is none.
absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const ServerOptions& options);

// kAuto picks CUDA when a usable device exists, else the CPU backend.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const ServerOptions& options);

}  // namespace cuimg

#endif  // CUIMG_SERVER_BACKEND_H_
