// libFuzzer targets: DICOM frames (codec/dicom_frame.h), one per decoder family, picked by
// CUIMG_FRAME_FAMILY: 1 rle_frame (RLE and native), 2 jpeg_frame (DCMTK's IJG codecs), 3
// j2k_frame (OpenJPEG and the codestream walk), 4 frame_sandbox (HT codestreams and JPEG-LS,
// through FrameSandbox's helper processes, as the server decodes them). Input: byte 0 rows and
// byte 1 columns (1..64), byte 2 bits allocated (bit 0: 16, else 8) and stored (the rest), byte
// 3 signed (bit 0) and the syntax within the family (the rest), then the frame. Every outcome
// must be OK or INVALID_ARGUMENT with reason CORRUPT_ENCODED_DATA naming the frame, never a crash
// (ASan/UBSan watch); the in-process families skip frames FrameNeedsSandbox sends to a helper.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuimg/codec/dicom_frame.h"
#include "cuimg/codec/frame_sandbox.h"
#include "cuimg/common/error.h"

namespace {

using cuimg::FrameSyntax;

#if CUIMG_FRAME_FAMILY == 1
constexpr FrameSyntax kSyntaxes[] = {FrameSyntax::kRle, FrameSyntax::kNative};
#elif CUIMG_FRAME_FAMILY == 2
constexpr FrameSyntax kSyntaxes[] = {FrameSyntax::kJpegBaseline, FrameSyntax::kJpegExtended,
                                     FrameSyntax::kJpegLossless, FrameSyntax::kJpegLosslessSv1};
#elif CUIMG_FRAME_FAMILY == 3
constexpr FrameSyntax kSyntaxes[] = {FrameSyntax::kJ2kLossless, FrameSyntax::kJ2k,
                                     FrameSyntax::kHtj2kLossless, FrameSyntax::kHtj2k};
#elif CUIMG_FRAME_FAMILY == 4
constexpr FrameSyntax kSyntaxes[] = {FrameSyntax::kHtj2kLossless, FrameSyntax::kJpegLsLossless,
                                     FrameSyntax::kJ2k, FrameSyntax::kJpegLsNearLossless};
#endif
constexpr bool kSandboxed = CUIMG_FRAME_FAMILY == 4;

cuimg::FrameSandbox* Sandbox() {
  static cuimg::FrameSandbox* sandbox = [] {
    cuimg::FrameSandboxOptions options;
    options.helper_path = CUIMG_FRAME_DECODER;
    options.max_helpers = 1;
    options.frame_timeout = absl::Seconds(5);  // under libFuzzer's -timeout=10
    absl::StatusOr<std::unique_ptr<cuimg::FrameSandbox>> s = cuimg::FrameSandbox::Create(options);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.status().message()).c_str());
      std::abort();
    }
    return s->release();  // for the process's life
  }();
  return sandbox;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  cuimg::FrameDescription d;
  d.rows = 1 + data[0] % 64;
  d.columns = 1 + data[1] % 64;
  d.bits_allocated = (data[2] & 1) != 0 ? 16 : 8;
  d.bits_stored = 1 + (data[2] >> 1) % d.bits_allocated;
  d.is_signed = (data[3] & 1) != 0;
  const FrameSyntax syntax = kSyntaxes[(data[3] >> 1) % (sizeof kSyntaxes / sizeof kSyntaxes[0])];
  const absl::Span<const std::uint8_t> frame(data + 4, size - 4);
  std::vector<std::uint8_t> out(cuimg::DecodedFrameBytes(d));
  absl::Status s;
  if (kSandboxed) {
    s = Sandbox()->Decode(syntax, d, frame, absl::MakeSpan(out), "frames[0]");
  } else {
    if (cuimg::FrameNeedsSandbox(syntax, frame)) return 0;
    s = cuimg::DecodeFrame(syntax, d, frame, absl::MakeSpan(out), "frames[0]");
  }
  if (!s.ok() && (s.code() != absl::StatusCode::kInvalidArgument ||
                  cuimg::ErrorReasonOf(s) != "CORRUPT_ENCODED_DATA" ||
                  cuimg::ErrorFieldOf(s) != "frames[0]")) {
    std::fprintf(stderr, "a frame refused without its reason and field: %s\n",
                 s.ToString().c_str());
    std::abort();
  }
  return 0;
}
