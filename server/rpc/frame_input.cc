#include "server/rpc/frame_input.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

std::string FrameField(const ImageInput& input, int index) {
  return absl::StrCat(input.field, ".frames[", index, "]");
}

absl::Status DecodeStoredFrame(const ImageInput& input, int index, FrameSandbox* sandbox,
                               absl::Span<std::uint8_t> stored) {
  const FrameVolume& f = *input.frames;
  const absl::Span<const std::uint8_t> frame = f.frames[static_cast<std::size_t>(index)];
  const std::string field = FrameField(input, index);
  if (!FrameNeedsSandbox(f.syntax, frame)) {
    return DecodeFrame(f.syntax, f.description, frame, stored, field);
  }
  if (sandbox == nullptr) {
    return MakeError(absl::StatusCode::kFailedPrecondition, ErrorReason::kUnsupportedEncoding,
                     field,
                     absl::StrCat(FrameSyntaxName(f.syntax),
                                  " frames need the frame decoder helper (cuimg-frame-decoder), "
                                  "which this server has not found"));
  }
  return sandbox->Decode(f.syntax, f.description, frame, stored, field);
}

absl::Status DecodeFramesOnHost(const ImageInput& input, FrameSandbox* sandbox,
                                DecodeThreads* threads, const CancelToken& cancel,
                                const ImageView& out) {
  const FrameVolume& f = *input.frames;
  const int count = static_cast<int>(f.frames.size());
  const std::size_t stored_bytes = DecodedFrameBytes(f.description);
  const std::size_t slice_bytes =
      static_cast<std::size_t>(out.extent.SlicePixels()) * PixelSize(out.type);
  std::atomic<int> next{0};
  std::mutex mutex;
  int first_bad = count;
  absl::Status first_error;
  const auto work = [&](int, int) {
    std::vector<std::uint8_t> stored(stored_bytes);
    for (int i; (i = next.fetch_add(1)) < count;) {
      absl::Status s = cancel.Check();
      if (s.ok()) s = DecodeStoredFrame(input, i, sandbox, absl::MakeSpan(stored));
      if (s.ok()) {
        s = RescaleFrame(f, i, stored, static_cast<char*>(out.data) + i * slice_bytes,
                         FrameField(input, i));
      }
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (i < first_bad) {
          first_bad = i;
          first_error = std::move(s);
        }
        // Frames after a failed one still run (a lower one may fail too); cancellation stops all.
        if (cancel.Stopped()) return;
      }
    }
  };
  const int wanted = std::min(count, kFrameDecodeThreads);
  if (threads != nullptr) {
    threads->Run(wanted, work);
  } else {
    work(0, 1);
  }
  if (!first_error.ok()) return first_error;
  return cancel.Check();
}

}  // namespace cuimg
