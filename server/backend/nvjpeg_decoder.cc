#include "server/backend/nvjpeg_decoder.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {

#ifndef CUIMG_HAVE_NVJPEG

NvjpegDevice::State::~State() = default;
NvjpegDevice::~NvjpegDevice() = default;

absl::StatusOr<std::unique_ptr<NvjpegDevice>> NvjpegDevice::Create(
    std::shared_ptr<const NvjpegLibrary>, Batching) {
  return absl::UnavailableError("built without nvjpeg.h");
}

absl::StatusOr<std::unique_ptr<NvjpegDevice::State>> NvjpegDevice::CreateState() const {
  return absl::UnavailableError("built without nvjpeg.h");
}

absl::Status NvjpegDevice::Decode(State&, absl::Span<const std::uint8_t>, const ImageView&, void*,
                                  cudaStream_t, BatchArrivals::Ticket*, BatchOutcome*) const {
  return absl::UnavailableError("built without nvjpeg.h");
}

#else

namespace {

nvjpegHandle_t H(void* p) { return static_cast<nvjpegHandle_t>(p); }
nvjpegJpegState_t S(void* p) { return static_cast<nvjpegJpegState_t>(p); }
nvjpegJpegStream_t J(void* p) { return static_cast<nvjpegJpegStream_t>(p); }

const char* StatusName(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS:
      return "SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG:
      return "BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "INCOMPLETE_BITSTREAM";
  }
  return "unknown";
}

// A status for a failed nvJPEG call: the stream's own faults are the caller's input.
absl::Status NvjpegError(nvjpegStatus_t s, const char* what) {
  const std::string message = absl::StrCat("nvJPEG ", what, ": ", StatusName(s));
  switch (s) {
    case NVJPEG_STATUS_BAD_JPEG:
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return absl::InvalidArgumentError(message);
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return absl::FailedPreconditionError(message);
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

#define CUIMG_NVJPEG_RETURN_IF_ERROR(expr, what)        \
  do {                                                  \
    const nvjpegStatus_t cuimg_nvjpeg_status_ = (expr); \
    if (cuimg_nvjpeg_status_ != NVJPEG_STATUS_SUCCESS)  \
      return NvjpegError(cuimg_nvjpeg_status_, (what)); \
  } while (0)

}  // namespace

NvjpegDevice::State::~State() {
  if (stream_ != nullptr) lib_->JpegStreamDestroy(J(stream_));
  if (state_ != nullptr) lib_->JpegStateDestroy(S(state_));
}

NvjpegDevice::~NvjpegDevice() {
  for (BatchState& b : batch_states_) {
    if (b.state != nullptr) lib_->JpegStateDestroy(S(b.state));
  }
  if (handle_ != nullptr) lib_->Destroy(H(handle_));
}

absl::StatusOr<std::unique_ptr<NvjpegDevice>> NvjpegDevice::Create(
    std::shared_ptr<const NvjpegLibrary> lib, Batching batching) {
  std::unique_ptr<NvjpegDevice> device(new NvjpegDevice());
  device->lib_ = std::move(lib);
  struct Choice {
    nvjpegBackend_t backend;
    const char* name;
  };
  // Strict bitstream checks: a corrupt file should fail here, as libjpeg-turbo refuses it on the
  // CPU path, rather than decode to something. Interpolated chroma upsampling: libjpeg-turbo's
  // default ("fancy") upsampling interpolates too, so the pixels stay closer to the CPU's.
  // Each is dropped where the backend refuses it.
  struct FlagSet {
    unsigned bits;
    const char* name;
  };
  const FlagSet kFlagSets[] = {
      {NVJPEG_FLAGS_BITSTREAM_STRICT | NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION,
       "+strict+interpolated_upsampling"},
      {NVJPEG_FLAGS_BITSTREAM_STRICT, "+strict"},
      {NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, "+interpolated_upsampling"},
      {NVJPEG_FLAGS_DEFAULT, ""}};
  std::string refusals;
  for (const Choice& c : {Choice{NVJPEG_BACKEND_HARDWARE, "hardware"},
                          Choice{NVJPEG_BACKEND_GPU_HYBRID, "gpu_hybrid"},
                          Choice{NVJPEG_BACKEND_DEFAULT, "default"}}) {
    for (const FlagSet& f : kFlagSets) {
      const unsigned flags = f.bits;
      const std::string name = absl::StrCat(c.name, f.name);
      nvjpegHandle_t handle = nullptr;
      const nvjpegStatus_t s = device->lib_->CreateEx(c.backend, nullptr, nullptr, flags, &handle);
      if (s == NVJPEG_STATUS_SUCCESS) {
        device->handle_ = handle;
        device->hardware_ = c.backend == NVJPEG_BACKEND_HARDWARE;
        device->backend_name_ = name;
        if (device->hardware_) {
          const NvjpegDevice* d = device.get();
          batching.max_batch = std::max(1, batching.max_batch);
          batching.lanes = std::max(1, batching.lanes);
          device->max_batch_ = batching.max_batch;
          device->lanes_ = batching.lanes;
          device->batch_states_.resize(static_cast<std::size_t>(batching.lanes) * 2 *
                                       batching.max_batch);
          device->batcher_ = std::make_unique<LeaderBatch<BatchItem>>(
              batching,
              [d](int lane, absl::Span<BatchItem* const> items) { d->RunBatch(lane, items); });
          CUIMG_RETURN_IF_ERROR(device->WarmBatches());
        }
        return device;
      }
      absl::StrAppend(&refusals, refusals.empty() ? "" : ", ", name, ": ", StatusName(s));
    }
  }
  return absl::UnavailableError(
      absl::StrCat("nvjpegCreateEx refused every backend (", refusals, ")"));
}

absl::StatusOr<std::unique_ptr<NvjpegDevice::State>> NvjpegDevice::CreateState() const {
  std::unique_ptr<State> state(new State());
  state->lib_ = lib_;
  // The hardware backend decodes in the batches' own states (StateFor), so a stream needs only
  // its JpegStream for the header; a JpegState of the hardware handle took ~130 ms to make (H200).
  if (!hardware_) {
    nvjpegJpegState_t jpeg_state = nullptr;
    CUIMG_NVJPEG_RETURN_IF_ERROR(lib_->JpegStateCreate(H(handle_), &jpeg_state), "state");
    state->state_ = jpeg_state;
  }
  nvjpegJpegStream_t stream = nullptr;
  CUIMG_NVJPEG_RETURN_IF_ERROR(lib_->JpegStreamCreate(H(handle_), &stream), "stream");
  state->stream_ = stream;
  return state;
}

absl::Status NvjpegDevice::Decode(State& state, absl::Span<const std::uint8_t> jpeg,
                                  const ImageView& shape, void* d_out, cudaStream_t stream,
                                  BatchArrivals::Ticket* ticket, BatchOutcome* outcome) const {
  if (outcome != nullptr) *outcome = BatchOutcome();
  // The output buffer is sized from ProbeImage: nvJPEG must read the same frame, or it would
  // write past it.
  CUIMG_NVJPEG_RETURN_IF_ERROR(
      lib_->JpegStreamParseHeader(H(handle_), jpeg.data(), jpeg.size(), J(state.stream_)),
      "header");
  unsigned width = 0, height = 0, components = 0;
  CUIMG_NVJPEG_RETURN_IF_ERROR(
      lib_->JpegStreamGetFrameDimensions(J(state.stream_), &width, &height), "dimensions");
  CUIMG_NVJPEG_RETURN_IF_ERROR(lib_->JpegStreamGetComponentsNum(J(state.stream_), &components),
                               "components");
  const bool gray = shape.channels == 1;
  if (static_cast<std::int64_t>(width) != shape.extent.width ||
      static_cast<std::int64_t>(height) != shape.extent.height || components != (gray ? 1u : 3u) ||
      shape.type != PixelType::kU8) {
    return absl::FailedPreconditionError(
        absl::StrCat("nvJPEG reads ", width, "x", height, "x", components, ", the probe ",
                     shape.extent.width, "x", shape.extent.height, "x", shape.channels));
  }
  const std::size_t pitch = static_cast<std::size_t>(width) * shape.channels;
  if (hardware_) {
    int unsupported = 0;
    CUIMG_NVJPEG_RETURN_IF_ERROR(
        lib_->DecodeBatchedSupported(H(handle_), J(state.stream_), &unsupported), "supported");
    if (unsupported != 0) {
      return absl::FailedPreconditionError("nvJPEG's hardware decoder does not take the file");
    }
    // The batch may run on another caller's stream: what this stream queued before (the output
    // buffer's last use) must be complete first.
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "before the nvJPEG batch");
    BatchItem item{jpeg.data(), jpeg.size(), d_out, pitch, gray, stream, absl::OkStatus()};
    const BatchOutcome batched = batcher_->Submit(&item, ticket);
    if (outcome != nullptr) *outcome = batched;
    return item.status;
  }
  nvjpegImage_t out{};
  out.channel[0] = static_cast<unsigned char*>(d_out);
  out.pitch[0] = pitch;
  const nvjpegStatus_t s = lib_->Decode(H(handle_), S(state.state_), jpeg.data(), jpeg.size(),
                                        gray ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_BGRI, &out, stream);
  // Whatever nvJPEG queued must finish before the caller reuses or returns the buffer.
  const cudaError_t sync = cudaStreamSynchronize(stream);
  CUIMG_NVJPEG_RETURN_IF_ERROR(s, "decode");
  CUIMG_CUDA_RETURN_IF_ERROR(sync, "nvJPEG decode");
  return absl::OkStatus();
}

absl::Status NvjpegDevice::WarmBatches() const {
  constexpr int kWidth = 1920;
  constexpr int kHeight = 1080;
  constexpr int kChannels = 3;
  // A smooth pattern with edges, so that the file has the Huffman tables and blocks of a photo.
  std::vector<std::uint8_t> pixels(std::size_t{kWidth} * kHeight * kChannels);
  std::uint8_t* p = pixels.data();
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      *p++ = static_cast<std::uint8_t>(x / 8);
      *p++ = static_cast<std::uint8_t>(y / 4);
      *p++ = ((x / 64) ^ (y / 64)) & 1 ? 200 : 40;
    }
  }
  const ImageView frame{PixelType::kU8, Extent{kWidth, kHeight, 1}, kChannels, pixels.data()};
  CUIMG_ASSIGN_OR_RETURN(const std::vector<std::uint8_t> jpeg, EncodeJpeg(frame, 90));
  const int largest = max_batch_;
  CUIMG_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::Allocate(frame.Bytes() * largest));
  for (int lane = 0; lane < lanes_; ++lane) {
    for (int count = 1; count <= largest; ++count) {
      std::vector<BatchItem> items(
          static_cast<std::size_t>(count),
          BatchItem{jpeg.data(), jpeg.size(), nullptr, std::size_t{kWidth} * kChannels, false,
                    stream.get(), absl::OkStatus()});
      std::vector<BatchItem*> group;
      for (int k = 0; k < count; ++k) {
        items[k].d_out = static_cast<std::uint8_t*>(out.data()) + frame.Bytes() * k;
        group.push_back(&items[k]);
      }
      DecodeGroup(lane, group, /*gray=*/false);
      for (const BatchItem& item : items) {
        if (!item.status.ok()) {
          return absl::UnavailableError(absl::StrCat("nvJPEG could not decode a warm-up batch of ",
                                                     count, ": ", item.status.message()));
        }
      }
    }
  }
  return absl::OkStatus();
}

NvjpegDevice::BatchState& NvjpegDevice::StateFor(int lane, bool gray, int count) const {
  return batch_states_[(static_cast<std::size_t>(lane) * 2 + (gray ? 1 : 0)) * max_batch_ +
                       static_cast<std::size_t>(count - 1)];
}

void NvjpegDevice::RunBatch(int lane, absl::Span<BatchItem* const> items) const {
  // One call per output format, in arrival order within each.
  for (const bool gray : {false, true}) {
    std::vector<BatchItem*> group;
    for (BatchItem* item : items) {
      if (item->gray == gray) group.push_back(item);
    }
    if (!group.empty()) DecodeGroup(lane, group, gray);
  }
}

void NvjpegDevice::DecodeGroup(int lane, absl::Span<BatchItem* const> items, bool gray) const {
  const int count = static_cast<int>(items.size());
  BatchState& b = StateFor(lane, gray, count);
  auto fail_all = [&](const absl::Status& status) {
    for (BatchItem* item : items) item->status = status;
  };
  if (b.state == nullptr) {
    nvjpegJpegState_t state = nullptr;
    const nvjpegStatus_t s = lib_->JpegStateCreate(H(handle_), &state);
    if (s != NVJPEG_STATUS_SUCCESS) return fail_all(NvjpegError(s, "state"));
    b.state = state;
  }
  if (!b.initialized) {
    const nvjpegStatus_t s = lib_->DecodeBatchedInitialize(
        H(handle_), S(b.state), count, 1, gray ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_BGRI);
    if (s != NVJPEG_STATUS_SUCCESS) return fail_all(NvjpegError(s, "initialize"));
    b.initialized = true;
  }
  std::vector<const unsigned char*> data(count);
  std::vector<std::size_t> lengths(count);
  std::vector<nvjpegImage_t> out(count);
  for (int i = 0; i < count; ++i) {
    data[i] = items[i]->data;
    lengths[i] = items[i]->length;
    out[i] = nvjpegImage_t{};
    out[i].channel[0] = static_cast<unsigned char*>(items[i]->d_out);
    out[i].pitch[0] = items[i]->pitch;
  }
  // Every caller of the batch waits with its stream idle: any of them may carry it.
  cudaStream_t stream = items[0]->stream;
  const nvjpegStatus_t s =
      lib_->DecodeBatched(H(handle_), S(b.state), data.data(), lengths.data(), out.data(), stream);
  const cudaError_t sync = cudaStreamSynchronize(stream);
  if (sync != cudaSuccess) {
    return fail_all(CudaStatus(sync, "nvJPEG decode", __FILE__, __LINE__));
  }
  if (s == NVJPEG_STATUS_SUCCESS) return fail_all(absl::OkStatus());
  // A failed batch leaves its state to be initialized again, and does not say which frame failed.
  b.initialized = false;
  if (count == 1) return fail_all(NvjpegError(s, "decode"));
  for (BatchItem* item : items) DecodeGroup(lane, absl::MakeConstSpan(&item, 1), gray);
}

#endif  // CUIMG_HAVE_NVJPEG

}  // namespace cuimg
