// The frame codecs (codec/dicom_frame.h, frame_encode.h) as a command, for the test that holds
// them against pydicom and the libraries' own tools (frame_codecs_pydicom_test.py):
//   frame_codec_tool decode UID ROWS COLUMNS BITS_ALLOCATED BITS_STORED SIGNED FRAME OUT
//     writes the decoded values (u8, or 16-bit little endian) to OUT; exit 3 and the status on
//     stderr ("INVALID_ARGUMENT CORRUPT_ENCODED_DATA frame: ...") when the frame is refused.
//   frame_codec_tool encode htj2k|j2k u8|u16|i16 ROWS COLUMNS RAW OUT
//     encodes RAW (the values, little endian) as a lossless frame.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/codec/frame_encode.h"
#include "cuimg/common/error.h"

namespace {

std::vector<std::uint8_t> ReadAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

bool WriteAll(const char* path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

int Fail(const absl::Status& s) {
  std::cerr << absl::StatusCodeToString(s.code()) << " " << cuimg::ErrorReasonOf(s) << " "
            << cuimg::ErrorFieldOf(s) << ": " << s.message() << "\n";
  return 3;
}

int Decode(char** argv) {
  absl::StatusOr<cuimg::FrameSyntax> syntax = cuimg::FrameSyntaxFromUid(argv[0], "syntax");
  if (!syntax.ok()) return Fail(syntax.status());
  cuimg::FrameDescription d;
  d.rows = std::atoi(argv[1]);
  d.columns = std::atoi(argv[2]);
  d.bits_allocated = std::atoi(argv[3]);
  d.bits_stored = std::atoi(argv[4]);
  d.is_signed = std::atoi(argv[5]) != 0;
  if (absl::Status s = cuimg::ValidateFrameDescription(d, "description"); !s.ok()) return Fail(s);
  const std::vector<std::uint8_t> frame = ReadAll(argv[6]);
  absl::StatusOr<cuimg::Image> image = cuimg::DecodeFrame(*syntax, d, frame, "frame");
  if (!image.ok()) return Fail(image.status());
  // The values as the host holds them: the tests run on little-endian hosts only.
  return WriteAll(argv[7], image->bytes(), image->size_bytes()) ? 0 : 1;
}

int Encode(char** argv) {
  const std::string codec = argv[0], type = argv[1];
  cuimg::ImageView view;
  view.type = type == "u8"    ? cuimg::PixelType::kU8
              : type == "u16" ? cuimg::PixelType::kU16
                              : cuimg::PixelType::kI16;
  view.extent = {std::atoi(argv[3]), std::atoi(argv[2]), 1};
  std::vector<std::uint8_t> raw = ReadAll(argv[4]);
  if (raw.size() != view.Bytes()) {
    std::cerr << "RAW holds " << raw.size() << " bytes, not " << view.Bytes() << "\n";
    return 2;
  }
  view.data = raw.data();
  absl::StatusOr<std::vector<std::uint8_t>> frame = cuimg::EncodeLosslessFrame(
      codec == "htj2k" ? cuimg::FrameSyntax::kHtj2kLossless : cuimg::FrameSyntax::kJ2kLossless,
      view);
  if (!frame.ok()) return Fail(frame.status());
  return WriteAll(argv[5], frame->data(), frame->size()) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "decode" && argc == 10) return Decode(argv + 2);
  if (command == "encode" && argc == 8) return Encode(argv + 2);
  std::cerr << "usage: frame_codec_tool decode UID ROWS COLUMNS BITS_ALLOCATED BITS_STORED "
               "SIGNED FRAME OUT\n"
               "       frame_codec_tool encode htj2k|j2k u8|u16|i16 ROWS COLUMNS RAW OUT\n";
  return 2;
}
