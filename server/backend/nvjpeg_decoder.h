// One GPU's nvJPEG decoder: the library handle (RAII), made with the hardware JPEG engines'
// backend where nvjpegCreateEx accepts it (A100, H100, H200), else GPU-assisted Huffman; and the
// per-stream decode state that nvJPEG requires for decodes running at once.
#ifndef CUIMG_SERVER_NVJPEG_DECODER_H_
#define CUIMG_SERVER_NVJPEG_DECODER_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/common/image.h"
#include "server/backend/leader_batch.h"
#include "server/backend/nvjpeg_library.h"

namespace cuimg {

// One hardware decode waiting for its batch (NvjpegDevice); `status` is its outcome.
struct NvjpegBatchItem {
  const std::uint8_t* data;
  std::size_t length;
  void* d_out;
  std::size_t pitch;
  bool gray;
  cudaStream_t stream;
  absl::Status status;
};

class NvjpegDevice {
 public:
  // Decode state for one stream at a time (nvJPEG's JpegStream, and its JpegState where the
  // backend is not the hardware one; owned).
  class State {
   public:
    ~State();
    State(const State&) = delete;
    State& operator=(const State&) = delete;

   private:
    friend class NvjpegDevice;
    State() = default;
    std::shared_ptr<const NvjpegLibrary> lib_;
    void* state_ = nullptr;   // nvjpegJpegState_t (null with the hardware backend)
    void* stream_ = nullptr;  // nvjpegJpegStream_t
  };

  // How the hardware engines' decodes are batched (LeaderBatch's options): at most max_batch
  // frames per call, `lanes` calls at once, a batch waiting up to max_delay for decodes announced
  // to `arrivals`.
  using Batching = LeaderBatch<NvjpegBatchItem>::Options;

  // For the current device. UNAVAILABLE when nvjpegCreateEx refuses every backend.
  static absl::StatusOr<std::unique_ptr<NvjpegDevice>> Create(
      std::shared_ptr<const NvjpegLibrary> lib, Batching batching = Batching());
  ~NvjpegDevice();
  NvjpegDevice(const NvjpegDevice&) = delete;
  NvjpegDevice& operator=(const NvjpegDevice&) = delete;

  // True with the hardware backend (single-scan baseline files only: JpegGpuRefusal's rule).
  bool hardware() const { return hardware_; }
  // "hardware" or "gpu_hybrid" / "default".
  const std::string& backend_name() const { return backend_name_; }

  // A state for one stream, with the device current.
  absl::StatusOr<std::unique_ptr<State>> CreateState() const;

  // Decodes `jpeg` into `d_out`: `shape` (ProbeImage's) is the output, U8, 1 channel (gray: luma)
  // or 3 (BGR interleaved), rows tightly packed; returns once the decode is complete and `stream`
  // idle. With the hardware backend, decodes that wait for the engine share one batched call
  // (LeaderBatch), which may run on another caller's stream; `ticket` (may be null) is the
  // caller's announcement to the batches (it arrives once the decode is queued), and `outcome`
  // (may be null) receives the batch that decoded the frame (size 0 without the hardware).
  // FAILED_PRECONDITION when nvJPEG reads another size or component count than `shape` (nothing
  // is written then) or its hardware backend does not take the file; INVALID_ARGUMENT when nvJPEG
  // finds the stream corrupt; a CUDA error's status for the stream. `state` is reset after a
  // failure, so it stays usable.
  absl::Status Decode(State& state, absl::Span<const std::uint8_t> jpeg, const ImageView& shape,
                      void* d_out, cudaStream_t stream, BatchArrivals::Ticket* ticket = nullptr,
                      BatchOutcome* outcome = nullptr) const;

 private:
  using BatchItem = NvjpegBatchItem;
  // The batched decoder's state for `count` frames of one output format in one lane, initialized
  // on first use and again after a failed batch.
  struct BatchState {
    void* state = nullptr;  // nvjpegJpegState_t
    bool initialized = false;
  };

  NvjpegDevice() = default;
  BatchState& StateFor(int lane, bool gray, int count) const;
  void RunBatch(int lane, absl::Span<BatchItem* const> items) const;
  // Decodes a 1920x1080 colour frame in a batch of each size the batcher forms, in each lane, so
  // that clients do not wait for nvJPEG to set up: a fresh server's first batch of 4 took ~2 s, a
  // further size's first ~0.12 s. With this (~0.6 s at start for one lane and 4 sizes), the first
  // second at 32 in flight served 760-857 1080p frames, not 32 (H200). Gray batches are still set
  // up on first use.
  absl::Status WarmBatches() const;
  // Decodes `items` (one format, 1..max_batch) in one call in `lane`; on failure, one at a time,
  // so that each item gets its own outcome.
  void DecodeGroup(int lane, absl::Span<BatchItem* const> items, bool gray) const;

  std::shared_ptr<const NvjpegLibrary> lib_;
  void* handle_ = nullptr;  // nvjpegHandle_t
  bool hardware_ = false;
  std::string backend_name_;
  int max_batch_ = 0;
  int lanes_ = 0;
  // StateFor's, lanes_ x 2 formats x max_batch_; a lane's are used by one batch at a time
  // (LeaderBatch's rule).
  mutable std::vector<BatchState> batch_states_;
  std::unique_ptr<LeaderBatch<BatchItem>> batcher_;  // with the hardware backend
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_NVJPEG_DECODER_H_
