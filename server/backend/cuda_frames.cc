#include "server/backend/cuda_frames.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/stored_values.h"

namespace cuimg::cuda_backend {
namespace {

// The lowest-numbered failure of frames decoded on several threads, so the answer never depends
// on which thread got there first.
class FirstFailure {
 public:
  void Note(int index, absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (index < index_) {
      index_ = index;
      status_ = std::move(status);
    }
  }
  absl::Status status() const { return status_; }

 private:
  std::mutex mu_;
  int index_ = 1 << 30;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CudaFrameDecoder>> CudaFrameDecoder::Create(
    std::shared_ptr<const Nvjpeg2kLibrary> lib, std::vector<DeviceContext*> devices) {
  std::unique_ptr<CudaFrameDecoder> decoder(new CudaFrameDecoder());
  decoder->lib_ = lib;
  for (DeviceContext* dev : devices) {
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(dev->info().ordinal), "cudaSetDevice");
    CUIMG_ASSIGN_OR_RETURN(std::unique_ptr<Nvjpeg2kDevice> device, Nvjpeg2kDevice::Create(lib));
    decoder->nvjpeg2k_.push_back(std::move(device));
    decoder->slots_.push_back(&dev->slot());
  }
  decoder->devices_ = std::move(devices);
  return decoder;
}

std::string CudaFrameDecoder::Summary() const {
  return absl::StrCat("nvjpeg2000 ", lib_->version());
}

absl::StatusOr<std::unique_ptr<const DeviceImage>> CudaFrameDecoder::DecodeFrames(
    const FrameVolume& volume, absl::string_view frames_field, const HostFrameDecode& on_host,
    DecodeThreads* threads, const CancelToken& cancel) {
  CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
  const int id = use.slot().id();
  DeviceContext& dev = *devices_[static_cast<std::size_t>(id)];
  absl::StatusOr<std::unique_ptr<const DeviceImage>> image =
      DecodeOn(dev, *nvjpeg2k_[static_cast<std::size_t>(id)], volume, frames_field, on_host,
               threads, cancel);
  // A sticky error poisons the context: the device leaves rotation, as after a work call's.
  const cudaError_t e = cudaPeekAtLastError();
  if (IsStickyCudaError(e)) {
    dev.slot().MarkFailed(absl::StrCat("sticky CUDA error ", cudaGetErrorName(e)));
  }
  return image;
}

absl::StatusOr<std::unique_ptr<const DeviceImage>> CudaFrameDecoder::DecodeOn(
    DeviceContext& dev, const Nvjpeg2kDevice& nvjpeg2k, const FrameVolume& volume,
    absl::string_view frames_field, const HostFrameDecode& on_host, DecodeThreads* threads,
    const CancelToken& cancel) {
  CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(dev.info().ordinal), "cudaSetDevice");
  const FrameDescription& d = volume.description;
  const int count = static_cast<int>(volume.frames.size());
  const std::size_t frame_bytes = DecodedFrameBytes(d);
  const std::int64_t frame_pixels = static_cast<std::int64_t>(d.rows) * d.columns;
  const PixelType out_type = FrameVolumeType(volume);
  // The image outlives this call (the work call reads it), so its buffer is not a call lease.
  CUIMG_ASSIGN_OR_RETURN(
      DeviceBufferCache::Lease result,
      dev.cache().Acquire(static_cast<std::size_t>(frame_pixels) * count * PixelSize(out_type)));
  // Stored values straight into the result when they are what is delivered.
  DeviceBufferCache::Lease stored_lease;
  void* stored = result.data();
  if (!volume.stored_values) {
    CUIMG_ASSIGN_OR_RETURN(stored_lease, dev.cache().Acquire(frame_bytes * count));
    stored = stored_lease.data();
  }
  std::vector<absl::Status> outcomes(static_cast<std::size_t>(count));
  CUIMG_RETURN_IF_ERROR(nvjpeg2k.DecodeFrames(volume.syntax, volume.frames, d, stored,
                                              absl::MakeSpan(outcomes), threads));
  CUIMG_RETURN_IF_ERROR(cancel.Check());

  // The frames nvJPEG2000 did not take: decoded on the host, each copied into its slice.
  std::vector<int> on_cpu;
  for (int i = 0; i < count; ++i) {
    if (!outcomes[static_cast<std::size_t>(i)].ok()) on_cpu.push_back(i);
  }
  if (!on_cpu.empty()) {
    std::atomic<std::size_t> next{0};
    FirstFailure failure;
    const auto work = [&](int, int) {
      if (cudaSetDevice(dev.info().ordinal) != cudaSuccess) {
        failure.Note(-1, absl::InternalError("cudaSetDevice"));
        return;
      }
      std::vector<std::uint8_t> values(frame_bytes);
      for (std::size_t k; (k = next.fetch_add(1)) < on_cpu.size();) {
        const int i = on_cpu[k];
        absl::Status s = cancel.Check();
        if (s.ok()) s = on_host(i, absl::MakeSpan(values));
        if (s.ok() && cudaMemcpy(static_cast<char*>(stored) + i * frame_bytes, values.data(),
                                 frame_bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
          s = absl::InternalError("copy of a frame decoded on the host");
        }
        if (!s.ok()) failure.Note(i, std::move(s));
      }
    };
    const int wanted = std::min<int>(static_cast<int>(on_cpu.size()), 16);
    if (threads != nullptr) {
      threads->Run(wanted, work);
    } else {
      work(0, 1);
    }
    CUIMG_RETURN_IF_ERROR(failure.status());
    // A pageable cudaMemcpy may return before its DMA ends, and the work call's non-blocking
    // stream does not wait for the legacy stream: wait here.
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cudaStreamLegacy),
                               "frames decoded on the host");
  }
  if (!volume.stored_values) {
    // The rescale: per-frame slopes and intercepts to the device, the out-of-range frame back.
    const std::size_t table = sizeof(double) * count;
    CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease params,
                           dev.cache().Acquire(2 * table + sizeof(int)));
    auto* d_slopes = static_cast<double*>(params.data());
    auto* d_intercepts = d_slopes + count;
    auto* d_bad = reinterpret_cast<int*>(d_intercepts + count);
    std::unique_ptr<DeviceContext::StreamLease> stream = dev.AcquireStream();
    const SyncOnExit sync{stream->get()};
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_slopes, volume.slopes.data(), table,
                                               cudaMemcpyHostToDevice, stream->get()),
                               "slopes");
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_intercepts, volume.intercepts.data(), table,
                                               cudaMemcpyHostToDevice, stream->get()),
                               "intercepts");
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(d_bad, &count, sizeof(int), cudaMemcpyHostToDevice, stream->get()),
        "bad frame");
    CUIMG_RETURN_IF_ERROR(RescaleFramesOnDevice(stored, DecodedPixelType(d), result.data(),
                                                out_type, frame_pixels, count, d_slopes,
                                                d_intercepts, d_bad, stream->get()));
    int bad = count;
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(&bad, d_bad, sizeof(int), cudaMemcpyDeviceToHost, stream->get()),
        "bad frame");
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream->get()), "rescale");
    if (bad < count) {
      // The host words the refusal as its own path does: decode and rescale that frame there.
      std::vector<std::uint8_t> values(frame_bytes);
      std::vector<std::uint8_t> pixels(static_cast<std::size_t>(frame_pixels) *
                                       PixelSize(out_type));
      CUIMG_RETURN_IF_ERROR(on_host(bad, absl::MakeSpan(values)));
      CUIMG_RETURN_IF_ERROR(RescaleFrame(volume, bad, values, pixels.data(),
                                         absl::StrCat(frames_field, "[", bad, "]")));
      return absl::InternalError("the device found a value out of range that the host did not");
    }
  }
  // Every decode and copy above has completed (each waited for above): the image is ready.
  return std::unique_ptr<const DeviceImage>(
      std::make_unique<CudaImage>(std::move(result), dev.slot().id()));
}

absl::StatusOr<std::vector<std::vector<std::uint8_t>>> CudaFrameDecoder::EncodeHtj2kLossless(
    const ImageView& image, DecodeThreads* threads) {
  CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
  const int id = use.slot().id();
  DeviceContext& dev = *devices_[static_cast<std::size_t>(id)];
  CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(dev.info().ordinal), "cudaSetDevice");
  CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease volume, dev.cache().Acquire(image.Bytes()));
  {
    std::unique_ptr<DeviceContext::StreamLease> stream = dev.AcquireStream();
    const SyncOnExit sync{stream->get()};
    std::vector<PinnedStagingPool::Lease> staging;
    CUIMG_RETURN_IF_ERROR(CopyToDeviceStaged(dev.staging(), volume.data(), image.data,
                                             image.Bytes(), stream->get(), &staging));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream->get()), "encode input");
  }
  absl::StatusOr<std::vector<std::vector<std::uint8_t>>> frames =
      nvjpeg2k_[static_cast<std::size_t>(id)]->EncodeHtj2kLossless(volume.data(), image, threads);
  const cudaError_t e = cudaPeekAtLastError();
  if (IsStickyCudaError(e)) {
    dev.slot().MarkFailed(absl::StrCat("sticky CUDA error ", cudaGetErrorName(e)));
  }
  return frames;
}

}  // namespace cuimg::cuda_backend
