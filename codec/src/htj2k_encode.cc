// HTJ2K lossless frames encoded by OpenJPH 0.9. Only encoding: Debian builds OpenJPH with its
// assertions on, and its decoder asserts (aborts the process) on malformed packet headers that
// a fuzzer finds in seconds, so frames from clients decode with OpenJPEG 2.5, whose HT decoder
// refuses them (j2k_frame.cc). OpenJPH throws on a fault; the encoder catches, so no exception
// leaves this file.
#include <openjph/ojph_arch.h>  // before the others, which use its macros
#include <openjph/ojph_codestream.h>
#include <openjph/ojph_file.h>
#include <openjph/ojph_mem.h>
#include <openjph/ojph_message.h>
#include <openjph/ojph_params.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/frame_encode.h"
#include "frame_internal.h"

namespace cuimg {
namespace {

// OpenJPH 0.9 reports a fault by printing it to its error stream and throwing
// std::runtime_error("ojph error"); warnings and notes are printed to their own streams. Its
// configure_error/_warning/_info are empty functions in 0.9, so the handlers cannot be replaced:
// the streams are, by ones that keep the text of this thread's last error (for the status) and
// drop the rest, so nothing reaches the server's stderr.
thread_local std::string last_error;

ssize_t KeepText(void*, const char* text, size_t size) {
  if (last_error.size() < 512) last_error.append(text, std::min<size_t>(size, 512));
  return static_cast<ssize_t>(size);
}
ssize_t DropText(void*, const char*, size_t size) { return static_cast<ssize_t>(size); }

FILE* TextSink(cookie_write_function_t* write) {
  cookie_io_functions_t functions{};
  functions.write = write;
  FILE* file = fopencookie(nullptr, "w", functions);
  // Unbuffered, so each message reaches KeepText on the thread that printed it.
  if (file != nullptr) std::setvbuf(file, nullptr, _IONBF, 0);
  return file;
}

void ConfigureMessages() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Opened once and kept for the process's life; without them OpenJPH prints to stderr.
    if (FILE* errors = TextSink(KeepText)) ojph::set_error_stream(errors);
    if (FILE* dropped = TextSink(DropText)) {
      ojph::set_warning_stream(dropped);
      ojph::set_info_stream(dropped);
    }
  });
  last_error.clear();
}

// The fault's text ("ojph error 0x00050044 at ojph_params.cpp:566: Rsiz bit 14 not set ..."),
// or what was thrown when none was printed.
std::string Fault(const std::exception& e) {
  std::string text = last_error.empty() ? e.what() : last_error;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

absl::StatusOr<std::vector<std::uint8_t>> EncodeHtj2kLossless(const ImageView& image) {
  ConfigureMessages();
  const auto width = static_cast<ojph::ui32>(image.extent.width);
  const auto height = static_cast<ojph::ui32>(image.extent.height);
  try {
    ojph::codestream codestream;
    ojph::param_siz siz = codestream.access_siz();
    siz.set_image_extent(ojph::point(width, height));
    siz.set_num_components(1);
    siz.set_component(0, ojph::point(1, 1), image.type == PixelType::kU8 ? 8 : 16,
                      image.type == PixelType::kI16);
    siz.set_image_offset(ojph::point(0, 0));
    siz.set_tile_size(ojph::size(width, height));
    siz.set_tile_offset(ojph::point(0, 0));
    ojph::param_cod cod = codestream.access_cod();
    cod.set_num_decomposition(static_cast<ojph::ui32>(
        LosslessDecompositions(static_cast<int>(width), static_cast<int>(height))));
    cod.set_block_dims(64, 64);
    cod.set_progression_order("RPCL");
    cod.set_color_transform(false);
    cod.set_reversible(true);
    codestream.set_planar(false);
    ojph::mem_outfile file;
    // OpenJPH 0.9 grows its buffer by half its size, so a tiny one never grows: start at 64 KiB.
    file.open(std::max<std::size_t>(std::size_t{1} << 16, std::size_t{width} * height));
    codestream.write_headers(&file);
    ojph::ui32 component = 0;
    ojph::line_buf* line = codestream.exchange(nullptr, component);
    for (ojph::ui32 y = 0; y < height; ++y) {
      const std::size_t row = static_cast<std::size_t>(y) * width;
      for (ojph::ui32 x = 0; x < width; ++x) {
        line->i32[x] = image.type == PixelType::kU8    ? image.As<const std::uint8_t>()[row + x]
                       : image.type == PixelType::kU16 ? image.As<const std::uint16_t>()[row + x]
                                                       : image.As<const std::int16_t>()[row + x];
      }
      line = codestream.exchange(line, component);
    }
    codestream.flush();
    const ojph::ui8* data = file.get_data();
    std::vector<std::uint8_t> bytes(data, data + file.tell());
    codestream.close();
    return bytes;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("OpenJPH encode: ", Fault(e)));
  }
}

}  // namespace cuimg
