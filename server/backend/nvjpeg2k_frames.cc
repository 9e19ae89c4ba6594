#include "server/backend/nvjpeg2k_frames.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/frame_encode.h"
#include "cuimg/codec/j2k_header.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/stored_values.h"

namespace cuimg {

std::string Nvjpeg2kDevice::Refusal(FrameSyntax syntax, const FrameDescription& d,
                                    absl::Span<const std::uint8_t> frame) {
  switch (syntax) {
    case FrameSyntax::kJ2kLossless:
    case FrameSyntax::kJ2k:
    case FrameSyntax::kHtj2kLossless:
    case FrameSyntax::kHtj2kLosslessRpcl:
    case FrameSyntax::kHtj2k:
      break;
    default:
      return absl::StrCat(FrameSyntaxName(syntax), " frames are not JPEG 2000");
  }
  absl::StatusOr<J2kSiz> siz = ReadJ2kSiz(frame);
  if (!siz.ok()) return std::string(siz.status().message());
  if (absl::Status s = CheckJ2kSiz(*siz, d); !s.ok()) return std::string(s.message());
  if (siz->jp2) return "a JP2 file";
  return "";
}

#ifndef CUIMG_HAVE_NVJPEG2K

struct Nvjpeg2kDevice::Pipeline {};
struct Nvjpeg2kDevice::Encoder {};

Nvjpeg2kDevice::~Nvjpeg2kDevice() = default;

absl::StatusOr<std::unique_ptr<Nvjpeg2kDevice>> Nvjpeg2kDevice::Create(
    std::shared_ptr<const Nvjpeg2kLibrary>, int) {
  return absl::UnavailableError("built without nvjpeg2k.h");
}

absl::Status Nvjpeg2kDevice::DecodeFrames(FrameSyntax,
                                          absl::Span<const absl::Span<const std::uint8_t>>,
                                          const FrameDescription&, void*, absl::Span<absl::Status>,
                                          DecodeThreads*) const {
  return absl::UnavailableError("built without nvjpeg2k.h");
}

absl::StatusOr<std::vector<std::vector<std::uint8_t>>> Nvjpeg2kDevice::EncodeHtj2kLossless(
    const void*, const ImageView&, DecodeThreads*) const {
  return absl::UnavailableError("built without nvjpeg2k.h");
}

#else

namespace {

nvjpeg2kHandle_t H(void* p) { return static_cast<nvjpeg2kHandle_t>(p); }
nvjpeg2kEncoder_t E(void* p) { return static_cast<nvjpeg2kEncoder_t>(p); }

const char* StatusName(nvjpeg2kStatus_t s) {
  switch (s) {
    case NVJPEG2K_STATUS_SUCCESS:
      return "SUCCESS";
    case NVJPEG2K_STATUS_NOT_INITIALIZED:
      return "NOT_INITIALIZED";
    case NVJPEG2K_STATUS_INVALID_PARAMETER:
      return "INVALID_PARAMETER";
    case NVJPEG2K_STATUS_BAD_JPEG:
      return "BAD_JPEG";
    case NVJPEG2K_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG_NOT_SUPPORTED";
    case NVJPEG2K_STATUS_ALLOCATOR_FAILURE:
      return "ALLOCATOR_FAILURE";
    case NVJPEG2K_STATUS_EXECUTION_FAILED:
      return "EXECUTION_FAILED";
    case NVJPEG2K_STATUS_ARCH_MISMATCH:
      return "ARCH_MISMATCH";
    case NVJPEG2K_STATUS_INTERNAL_ERROR:
      return "INTERNAL_ERROR";
    case NVJPEG2K_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "IMPLEMENTATION_NOT_SUPPORTED";
  }
  return "unknown";
}

absl::Status Nvjpeg2kError(nvjpeg2kStatus_t s, absl::string_view what) {
  const std::string message = absl::StrCat("nvJPEG2000 ", what, ": ", StatusName(s));
  if (s == NVJPEG2K_STATUS_ALLOCATOR_FAILURE) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

// The sample type nvJPEG2000 decodes a component of `precision` bits into.
PixelType CodestreamType(int precision, bool is_signed) {
  if (is_signed) return PixelType::kI16;
  return precision <= 8 ? PixelType::kU8 : PixelType::kU16;
}

nvjpeg2kImageType_t Nvjpeg2kType(PixelType type) {
  switch (type) {
    case PixelType::kU8:
      return NVJPEG2K_UINT8;
    case PixelType::kI16:
      return NVJPEG2K_INT16;
    default:
      return NVJPEG2K_UINT16;
  }
}

}  // namespace

// A decode in flight: nvJPEG2000's state (reused only once its last decode has completed) and
// parsed stream, a CUDA stream, the event marking the decode's end, and scratch for frames whose
// codestream type is not the frame's.
struct Nvjpeg2kDevice::Pipeline {
  std::shared_ptr<const Nvjpeg2kLibrary> lib;
  nvjpeg2kDecodeState_t state = nullptr;
  nvjpeg2kStream_t parsed = nullptr;
  CudaStream stream;
  CudaEvent done;
  DeviceBuffer scratch;
  bool in_flight = false;
  ~Pipeline() {
    if (parsed != nullptr) lib->StreamDestroy(parsed);
    if (state != nullptr) lib->DecodeStateDestroy(state);
  }
};

struct Nvjpeg2kDevice::Encoder {
  std::shared_ptr<const Nvjpeg2kLibrary> lib;
  nvjpeg2kEncodeState_t state = nullptr;
  nvjpeg2kEncodeParams_t params = nullptr;
  CudaStream stream;
  ~Encoder() {
    if (params != nullptr) lib->EncodeParamsDestroy(params);
    if (state != nullptr) lib->EncodeStateDestroy(state);
  }
};

Nvjpeg2kDevice::~Nvjpeg2kDevice() {
  pipelines_.clear();
  encoders_.clear();
  if (encoder_ != nullptr) lib_->EncoderDestroy(E(encoder_));
  if (handle_ != nullptr) lib_->Destroy(H(handle_));
}

absl::StatusOr<std::unique_ptr<Nvjpeg2kDevice>> Nvjpeg2kDevice::Create(
    std::shared_ptr<const Nvjpeg2kLibrary> lib, int decodes_per_thread) {
  std::unique_ptr<Nvjpeg2kDevice> device(new Nvjpeg2kDevice());
  device->lib_ = std::move(lib);
  device->decodes_per_thread_ = std::max(1, decodes_per_thread);
  CUIMG_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device->device_), "nvJPEG2000 device");
  nvjpeg2kHandle_t handle = nullptr;
  if (nvjpeg2kStatus_t s = device->lib_->CreateSimple(&handle); s != NVJPEG2K_STATUS_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("nvjpeg2kCreateSimple: ", StatusName(s)));
  }
  device->handle_ = handle;
  nvjpeg2kEncoder_t encoder = nullptr;
  if (nvjpeg2kStatus_t s = device->lib_->EncoderCreateSimple(&encoder);
      s != NVJPEG2K_STATUS_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("nvjpeg2kEncoderCreateSimple: ", StatusName(s)));
  }
  device->encoder_ = encoder;
  return device;
}

absl::StatusOr<std::unique_ptr<Nvjpeg2kDevice::Pipeline>> Nvjpeg2kDevice::AcquirePipeline() const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pipelines_.empty()) {
      std::unique_ptr<Pipeline> p = std::move(pipelines_.back());
      pipelines_.pop_back();
      return p;
    }
  }
  auto p = std::make_unique<Pipeline>();
  p->lib = lib_;
  if (nvjpeg2kStatus_t s = lib_->DecodeStateCreate(H(handle_), &p->state);
      s != NVJPEG2K_STATUS_SUCCESS) {
    return Nvjpeg2kError(s, "decode state");
  }
  if (nvjpeg2kStatus_t s = lib_->StreamCreate(&p->parsed); s != NVJPEG2K_STATUS_SUCCESS) {
    return Nvjpeg2kError(s, "stream");
  }
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  if (!stream.ok()) return stream.status();
  p->stream = std::move(*stream);
  absl::StatusOr<CudaEvent> done = CudaEvent::CreateForSync();
  if (!done.ok()) return done.status();
  p->done = std::move(*done);
  return p;
}

void Nvjpeg2kDevice::ReleasePipeline(std::unique_ptr<Pipeline> pipeline) const {
  std::lock_guard<std::mutex> lock(mutex_);
  pipelines_.push_back(std::move(pipeline));
}

absl::Status Nvjpeg2kDevice::DecodeOne(Pipeline& p, absl::Span<const std::uint8_t> frame,
                                       const FrameDescription& d, void* d_out,
                                       absl::Status* outcome) const {
  const auto refuse = [&](nvjpeg2kStatus_t s, absl::string_view what) {
    *outcome = absl::FailedPreconditionError(
        absl::StrCat("nvJPEG2000 ", what, s == NVJPEG2K_STATUS_SUCCESS ? "" : ": ",
                     s == NVJPEG2K_STATUS_SUCCESS ? "" : StatusName(s)));
    return absl::OkStatus();
  };
  if (nvjpeg2kStatus_t s =
          lib_->StreamParse(H(handle_), frame.data(), frame.size(), 0, 0, p.parsed);
      s != NVJPEG2K_STATUS_SUCCESS) {
    return refuse(s, "parse");
  }
  // The buffer is sized from the description: nvJPEG2000 must read the same frame.
  nvjpeg2kImageInfo_t info{};
  nvjpeg2kImageComponentInfo_t component{};
  if (nvjpeg2kStatus_t s = lib_->StreamGetImageInfo(p.parsed, &info);
      s != NVJPEG2K_STATUS_SUCCESS) {
    return refuse(s, "image info");
  }
  if (nvjpeg2kStatus_t s = lib_->StreamGetImageComponentInfo(p.parsed, &component, 0);
      s != NVJPEG2K_STATUS_SUCCESS) {
    return refuse(s, "component info");
  }
  if (info.image_width != static_cast<std::uint32_t>(d.columns) ||
      info.image_height != static_cast<std::uint32_t>(d.rows) || info.num_components != 1 ||
      component.component_width != info.image_width ||
      component.component_height != info.image_height || component.precision < 1 ||
      component.precision > d.bits_allocated) {
    return refuse(NVJPEG2K_STATUS_SUCCESS, "reads another image than the description");
  }
  // Straight into the volume when the stored-value rule leaves every value the codestream can
  // hold as it is: the same sample type, and no bit above BitsStored (or a sign bit) to fold.
  const PixelType out_type = DecodedPixelType(d);
  const bool is_signed = component.sgn != 0;
  const PixelType decoded = CodestreamType(component.precision, is_signed);
  const bool direct =
      component.precision <= d.bits_stored &&
      ((is_signed && d.is_signed) || (!is_signed && !d.is_signed && decoded == out_type) ||
       (!is_signed && !d.is_signed && out_type == PixelType::kU16));
  const PixelType written = direct ? out_type : decoded;
  const std::size_t pixels = static_cast<std::size_t>(d.rows) * d.columns;
  if (!direct && p.scratch.size() < pixels * PixelSize(written)) {
    absl::StatusOr<DeviceBuffer> scratch = DeviceBuffer::Allocate(pixels * 2);
    if (!scratch.ok()) return scratch.status();
    p.scratch = std::move(*scratch);
  }
  void* target = direct ? d_out : p.scratch.data();
  std::size_t pitch = static_cast<std::size_t>(d.columns) * PixelSize(written);
  nvjpeg2kImage_t image{};
  image.pixel_data = &target;
  image.pitch_in_bytes = &pitch;
  image.pixel_type = Nvjpeg2kType(written);
  image.num_components = 1;
  const nvjpeg2kStatus_t s =
      lib_->DecodeImage(H(handle_), p.state, p.parsed, nullptr, &image, p.stream.get());
  if (s == NVJPEG2K_STATUS_EXECUTION_FAILED || s == NVJPEG2K_STATUS_INTERNAL_ERROR) {
    // A fault of the device, or of the library on this frame: the CUDA error says which.
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(p.stream.get()), "nvJPEG2000 decode");
  }
  if (s != NVJPEG2K_STATUS_SUCCESS) return refuse(s, "decode");
  if (!direct) {
    const std::uint32_t mask = (1u << d.bits_stored) - 1;  // bits_stored <= 16
    const std::int32_t sign = d.is_signed ? 1 << (d.bits_stored - 1) : 0;
    CUIMG_RETURN_IF_ERROR(StoreValuesOnDevice(p.scratch.data(), written, d_out, out_type,
                                              static_cast<std::int64_t>(pixels), mask, sign,
                                              p.stream.get()));
  }
  CUIMG_RETURN_IF_ERROR(p.done.Record(p.stream.get()));
  p.in_flight = true;
  *outcome = absl::OkStatus();
  return absl::OkStatus();
}

absl::Status Nvjpeg2kDevice::DecodeFrames(FrameSyntax syntax,
                                          absl::Span<const absl::Span<const std::uint8_t>> frames,
                                          const FrameDescription& d, void* d_volume,
                                          absl::Span<absl::Status> outcomes,
                                          DecodeThreads* threads) const {
  if (outcomes.size() != frames.size()) {
    return absl::InternalError("one outcome per frame is needed");
  }
  const std::size_t frame_bytes = DecodedFrameBytes(d);
  std::mutex fault_mutex;
  absl::Status fault;
  const auto run = [&](int index, int n) {
    absl::Status s = [&]() -> absl::Status {
      CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "nvJPEG2000 device");
      // Several pipelines: this thread parses the next frame while the others decode on the GPU.
      std::vector<std::unique_ptr<Pipeline>> slots(decodes_per_thread_);
      absl::Status held;
      for (auto& slot : slots) {
        absl::StatusOr<std::unique_ptr<Pipeline>> p = AcquirePipeline();
        if (!p.ok()) {
          held = p.status();
          break;
        }
        slot = std::move(*p);
      }
      std::size_t turn = 0;
      for (std::size_t i = index; held.ok() && i < frames.size(); i += n) {
        if (std::string why = Refusal(syntax, d, frames[i]); !why.empty()) {
          outcomes[i] = absl::FailedPreconditionError(why);
          continue;
        }
        Pipeline& p = *slots[turn++ % slots.size()];
        if (p.in_flight) {
          held = p.done.Synchronize();
          p.in_flight = false;
          if (!held.ok()) break;
        }
        held = DecodeOne(p, frames[i], d, static_cast<char*>(d_volume) + i * frame_bytes,
                         &outcomes[i]);
      }
      for (auto& slot : slots) {
        if (slot == nullptr) continue;
        if (slot->in_flight) {
          absl::Status s = slot->done.Synchronize();
          if (held.ok()) held = s;
          slot->in_flight = false;
        }
        // A pipeline is reused only when the device is healthy.
        if (held.ok()) ReleasePipeline(std::move(slot));
      }
      return held;
    }();
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(fault_mutex);
      if (fault.ok()) fault = s;
    }
  };
  const int wanted = static_cast<int>(std::max<std::size_t>(1, frames.size() / 4));
  if (threads != nullptr) {
    threads->Run(wanted, run);
  } else {
    run(0, 1);
  }
  return fault;
}

absl::StatusOr<std::unique_ptr<Nvjpeg2kDevice::Encoder>> Nvjpeg2kDevice::AcquireEncoder() const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!encoders_.empty()) {
      std::unique_ptr<Encoder> e = std::move(encoders_.back());
      encoders_.pop_back();
      return e;
    }
  }
  auto e = std::make_unique<Encoder>();
  e->lib = lib_;
  if (nvjpeg2kStatus_t s = lib_->EncodeStateCreate(E(encoder_), &e->state);
      s != NVJPEG2K_STATUS_SUCCESS) {
    return Nvjpeg2kError(s, "encode state");
  }
  if (nvjpeg2kStatus_t s = lib_->EncodeParamsCreate(&e->params); s != NVJPEG2K_STATUS_SUCCESS) {
    return Nvjpeg2kError(s, "encode parameters");
  }
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  if (!stream.ok()) return stream.status();
  e->stream = std::move(*stream);
  return e;
}

void Nvjpeg2kDevice::ReleaseEncoder(std::unique_ptr<Encoder> encoder) const {
  std::lock_guard<std::mutex> lock(mutex_);
  encoders_.push_back(std::move(encoder));
}

absl::StatusOr<std::vector<std::vector<std::uint8_t>>> Nvjpeg2kDevice::EncodeHtj2kLossless(
    const void* d_volume, const ImageView& shape, DecodeThreads* threads) const {
  if (shape.type == PixelType::kF32 || shape.channels != 1 || shape.extent.width < 1 ||
      shape.extent.height < 1 || shape.extent.width > 65535 || shape.extent.height > 65535) {
    return absl::InvalidArgumentError(
        "slices are encoded from one-channel u8, u16 or i16 images up to 65535 per side");
  }
  const auto width = static_cast<std::uint32_t>(shape.extent.width);
  const auto height = static_cast<std::uint32_t>(shape.extent.height);
  const std::size_t slice_bytes = static_cast<std::size_t>(width) * height * PixelSize(shape.type);
  const std::size_t depth = static_cast<std::size_t>(shape.extent.depth);
  std::vector<std::vector<std::uint8_t>> frames(depth);
  std::mutex fault_mutex;
  absl::Status fault;
  const auto run = [&](int index, int n) {
    absl::Status s = [&]() -> absl::Status {
      CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "nvJPEG2000 device");
      CUIMG_ASSIGN_OR_RETURN(std::unique_ptr<Encoder> e, AcquireEncoder());
      nvjpeg2kImageComponentInfo_t component{};
      component.component_width = width;
      component.component_height = height;
      component.precision = shape.type == PixelType::kU8 ? 8 : 16;
      component.sgn = shape.type == PixelType::kI16 ? 1 : 0;
      nvjpeg2kEncodeConfig_t config{};
      config.stream_type = NVJPEG2K_STREAM_J2K;
      config.color_space = NVJPEG2K_COLORSPACE_GRAY;
      config.rsiz = NVJPEG2K_RSIZ_HT;
      config.image_width = width;
      config.image_height = height;
      config.num_components = 1;
      config.image_comp_info = &component;
      config.prog_order = NVJPEG2K_RPCL;
      config.num_layers = 1;
      config.mct_mode = 0;
      config.num_resolutions = static_cast<std::uint32_t>(
          1 + LosslessDecompositions(static_cast<int>(width), static_cast<int>(height)));
      config.code_block_w = config.code_block_h = 64;
      config.encode_modes = NVJPEG2K_MODE_HT;
      config.irreversible = 0;
      if (nvjpeg2kStatus_t st = lib_->EncodeParamsSetEncodeConfig(e->params, &config);
          st != NVJPEG2K_STATUS_SUCCESS) {
        return Nvjpeg2kError(st, "encode config");
      }
      for (std::size_t z = index; z < depth; z += n) {
        void* slice = const_cast<char*>(static_cast<const char*>(d_volume)) + z * slice_bytes;
        std::size_t pitch = static_cast<std::size_t>(width) * PixelSize(shape.type);
        nvjpeg2kImage_t input{};
        input.pixel_data = &slice;
        input.pitch_in_bytes = &pitch;
        input.pixel_type = Nvjpeg2kType(shape.type);
        input.num_components = 1;
        if (nvjpeg2kStatus_t st =
                lib_->Encode(E(encoder_), e->state, e->params, &input, e->stream.get());
            st != NVJPEG2K_STATUS_SUCCESS) {
          return Nvjpeg2kError(st, "encode");
        }
        std::size_t length = 0;  // a null buffer asks for the size, synchronously
        if (nvjpeg2kStatus_t st = lib_->EncodeRetrieveBitstream(E(encoder_), e->state, nullptr,
                                                                &length, e->stream.get());
            st != NVJPEG2K_STATUS_SUCCESS) {
          return Nvjpeg2kError(st, "bitstream size");
        }
        frames[z].resize(length);
        if (nvjpeg2kStatus_t st = lib_->EncodeRetrieveBitstream(
                E(encoder_), e->state, frames[z].data(), &length, e->stream.get());
            st != NVJPEG2K_STATUS_SUCCESS) {
          return Nvjpeg2kError(st, "bitstream");
        }
        CUIMG_RETURN_IF_ERROR(e->stream.Synchronize());
        frames[z].resize(length);
      }
      ReleaseEncoder(std::move(e));
      return absl::OkStatus();
    }();
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(fault_mutex);
      if (fault.ok()) fault = s;
    }
  };
  const int wanted = static_cast<int>(std::max<std::size_t>(1, depth / 4));
  if (threads != nullptr) {
    threads->Run(wanted, run);
  } else {
    run(0, 1);
  }
  if (!fault.ok()) return fault;
  return frames;
}

#endif  // CUIMG_HAVE_NVJPEG2K

}  // namespace cuimg
