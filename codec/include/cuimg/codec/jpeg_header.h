// A JPEG's structure read by walking its markers on the CPU (no pixel is decoded), and the rule
// that sends a file to the GPU decoder (nvJPEG) or to the CPU one (libjpeg-turbo). The CPU decoder
// is the authority on what is corrupt: anything this walk finds unusual goes there, so a file
// refused today is refused the same way whichever decoder is active.
#ifndef CUIMG_CODEC_JPEG_HEADER_H_
#define CUIMG_CODEC_JPEG_HEADER_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace cuimg {

struct JpegComponent {
  int id = 0;
  int h = 0;  // sampling factors, 1..4
  int v = 0;
  int quant_table = 0;
};

struct JpegHeader {
  int sof = 0;        // the frame's marker: 0xC0 baseline .. 0xCF; see JpegGpuRefusal
  int precision = 0;  // bits per sample
  int width = 0;
  int height = 0;  // 0 when a DNL marker defines it
  int components = 0;
  std::array<JpegComponent, 4> component{};  // the first `components`
  int adobe_transform = -1;                  // APP14 "Adobe" colour transform; -1 when absent
  int restart_interval = 0;                  // DRI, MCUs (the last one seen)
  int scans = 0;
  // Every scan's Huffman tables were defined before it (libjpeg-turbo substitutes standard
  // tables for missing ones; nvJPEG may not).
  bool tables_defined = true;
  // Restart markers came in sequence and, for a single-scan file with a restart interval, as
  // many as the MCUs need.
  bool restarts_consistent = true;
};

// Walks every marker segment and entropy-coded segment from SOI to EOI. INVALID_ARGUMENT naming
// the first structural fault: a bad signature, a segment running past the end, a frame header
// of the wrong length, a scan before the frame, a scan naming a component the frame lacks, a
// marker where none may be, no EOI (a truncated file). Reads only `bytes`.
absl::StatusOr<JpegHeader> ReadJpegHeader(absl::Span<const std::uint8_t> bytes);

// Why the GPU decoder must not take a file with this header ("" when it may): not 8-bit
// sequential Huffman DCT (progressive only where `hardware` is false: NVJPEG_BACKEND_HARDWARE
// decodes single-scan baseline files only), not gray or YCbCr (CMYK, YCCK, Adobe RGB, 2
// components), sampling nvJPEG's output formats do not cover (hardware: no 4:1:1 or 4:1:0), a
// missing Huffman table, inconsistent restart markers, a height given by DNL.
std::string JpegGpuRefusal(const JpegHeader& header, bool hardware);

}  // namespace cuimg

#endif  // CUIMG_CODEC_JPEG_HEADER_H_
