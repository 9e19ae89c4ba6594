// Strip-parallel JPEG decoding with libjpeg-turbo's own decoder: strip i skips the rows above it
// (jpeg_skip_scanlines entropy-decodes them but skips the IDCT, upsampling and colour conversion,
// which dominate) and decodes its own rows. Every strip runs the same decoder on the same bytes,
// so the rows are exactly those of one serial decode. libjpeg reports errors by longjmp: the
// decoding function keeps only trivially destructible state between setjmp and the libjpeg calls.
#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <cstdio>

// libjpeg's header uses FILE and size_t without including their headers: it comes after <cstdio>.
#include <jpeglib.h>

#include "codec_internal.h"

namespace cuimg {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};

[[noreturn]] void ErrorExit(j_common_ptr cinfo) {
  std::longjmp(reinterpret_cast<ErrorManager*>(cinfo->err)->jump, 1);
}
void Silent(j_common_ptr) {}

// Rows [begin, end) of the image into `pixels` (row r at pixels + r * stride). False on any error
// or warning (corrupt data), and for files a strip decode does not take (several scans: the
// decoder would buffer the whole image per strip; colour spaces other than YCbCr and gray).
bool DecodeRows(const std::uint8_t* data, std::size_t size, int begin, int end, bool gray,
                std::uint8_t* pixels, std::size_t stride) {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = ErrorExit;
  err.pub.output_message = Silent;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const bool layout_ok =
      !jpeg_has_multiple_scans(&cinfo) &&
      (gray ? cinfo.jpeg_color_space == JCS_GRAYSCALE : cinfo.jpeg_color_space == JCS_YCbCr);
  if (!layout_ok) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  // As TurboJPEG's tjDecompress2 with TJPF_BGR / TJPF_GRAY and TJFLAG_ACCURATEDCT.
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : JCS_EXT_BGR;
  cinfo.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&cinfo);
  if (begin > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(begin));
  while (cinfo.output_scanline < static_cast<JDIMENSION>(end)) {
    JSAMPROW row = pixels + static_cast<std::size_t>(cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  // The last strip reads on to the end of the image, as a serial decode does: what follows the
  // last scanline (markers before EOI) can still be corrupt.
  if (cinfo.output_scanline == cinfo.output_height) jpeg_finish_decompress(&cinfo);
  const bool clean = err.pub.num_warnings == 0;
  jpeg_destroy_decompress(&cinfo);
  return clean;
}

}  // namespace

bool DecodeJpegInStrips(absl::Span<const std::uint8_t> bytes, DecodeThreads& threads,
                        Image& image) {
  const int height = static_cast<int>(image.extent().height);
  // Strips of at least this many rows: below it the thread hand-off costs more than it saves.
  constexpr int kMinRows = 128;
  // 16 rows: the tallest iMCU row (4:2:0, 4:4:0); boundaries on it keep skips cheap.
  constexpr int kRowAlign = 16;
  const int wanted = std::min(threads.size() + 1, height / kMinRows);
  if (wanted < 2) return false;
  const bool gray = image.channels() == 1;
  const std::size_t stride = static_cast<std::size_t>(image.extent().width) * image.channels();
  auto* pixels = static_cast<std::uint8_t*>(image.bytes());
  std::atomic<bool> ok{true};
  threads.Run(wanted, [&](int index, int n) {
    auto boundary = [&](int i) {
      return i == n ? height : std::min(height, height * i / n / kRowAlign * kRowAlign);
    };
    if (!DecodeRows(bytes.data(), bytes.size(), boundary(index), boundary(index + 1), gray, pixels,
                    stride)) {
      ok = false;
    }
  });
  return ok;
}

}  // namespace cuimg
