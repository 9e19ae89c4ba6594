#include "server/rpc/frame_output.h"

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/frame_encode.h"
#include "server/observability/log.h"

namespace cuimg {
namespace {

// Every slice on the host, on the calling thread and the idle ones of `threads`.
absl::StatusOr<std::vector<std::vector<std::uint8_t>>> EncodeOnHost(const ImageView& result,
                                                                    FrameSyntax encoding,
                                                                    DecodeThreads* threads) {
  const int depth = static_cast<int>(result.extent.depth);
  std::vector<std::vector<std::uint8_t>> frames(static_cast<std::size_t>(depth));
  ImageView slice = result;
  slice.extent.depth = 1;
  const std::size_t slice_bytes = slice.Bytes();
  std::atomic<int> next{0};
  std::mutex mutex;
  absl::Status failed;
  const auto work = [&](int, int) {
    for (int z; (z = next.fetch_add(1)) < depth;) {
      ImageView one = slice;
      one.data = static_cast<char*>(result.data) + z * slice_bytes;
      absl::StatusOr<std::vector<std::uint8_t>> frame = EncodeLosslessFrame(encoding, one);
      if (!frame.ok()) {
        std::lock_guard<std::mutex> lock(mutex);
        failed = frame.status();
        return;
      }
      frames[static_cast<std::size_t>(z)] = *std::move(frame);
    }
  };
  if (threads != nullptr) {
    threads->Run(std::min(depth, 16), work);
  } else {
    work(0, 1);
  }
  if (!failed.ok()) return absl::InternalError(absl::StrCat("frame encode: ", failed.message()));
  return frames;
}

}  // namespace

absl::Status EncodeResultFrames(const ImageView& result, const v1::Spacing& spacing,
                                FrameSyntax encoding, const ImageDecoders& decoders,
                                v1::DicomFrames* out) {
  absl::StatusOr<std::vector<std::vector<std::uint8_t>>> frames =
      absl::UnavailableError("no GPU encoder");
  if (decoders.frames != nullptr && encoding == FrameSyntax::kHtj2kLossless) {
    frames = decoders.frames->EncodeHtj2kLossless(result, decoders.threads);
    if (!frames.ok()) {
      LogEvent(LogLevel::kDebug, "frames_gpu_encode_fallback",
               {{"message", frames.status().ToString()}});
    }
  }
  if (!frames.ok()) frames = EncodeOnHost(result, encoding, decoders.threads);
  if (!frames.ok()) return frames.status();
  const FrameDescription d = LosslessFrameDescription(
      ImageView{result.type, Extent{result.extent.width, result.extent.height, 1}, 1, nullptr});
  out->set_transfer_syntax_uid(std::string(FrameSyntaxUid(encoding)));
  v1::DicomPixelModule* module = out->mutable_pixel_module();
  module->set_rows(static_cast<std::uint32_t>(d.rows));
  module->set_columns(static_cast<std::uint32_t>(d.columns));
  module->set_samples_per_pixel(1);
  module->set_bits_allocated(static_cast<std::uint32_t>(d.bits_allocated));
  module->set_bits_stored(static_cast<std::uint32_t>(d.bits_stored));
  module->set_pixel_signed(d.is_signed);
  module->set_photometric_interpretation(v1::PHOTOMETRIC_INTERPRETATION_MONOCHROME2);
  for (std::vector<std::uint8_t>& f : *frames) {
    v1::DicomFrame* frame = out->add_frames();
    frame->set_data(reinterpret_cast<const char*>(f.data()), f.size());
    frame->set_rescale_slope(1);
    frame->set_rescale_intercept(0);
  }
  *out->mutable_spacing() = spacing;
  return absl::OkStatus();
}

}  // namespace cuimg
