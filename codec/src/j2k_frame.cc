// JPEG 2000 and HTJ2K frames through OpenJPEG 2.5: decoding (raw codestreams and JP2 files,
// strict mode, so a codestream cut short is an error rather than a partly decoded image) and
// lossless JPEG 2000 encoding.
#include <openjpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/frame_encode.h"
#include "frame_internal.h"

namespace cuimg {
namespace {

struct CodecDeleter {
  void operator()(opj_codec_t* c) const { opj_destroy_codec(c); }
};
struct StreamDeleter {
  void operator()(opj_stream_t* s) const { opj_stream_destroy(s); }
};
struct ImageDeleter {
  void operator()(opj_image_t* i) const { opj_image_destroy(i); }
};
using Codec = std::unique_ptr<opj_codec_t, CodecDeleter>;
using Stream = std::unique_ptr<opj_stream_t, StreamDeleter>;
using OpjImage = std::unique_ptr<opj_image_t, ImageDeleter>;

// OpenJPEG's error messages, the last one kept for the status (they end in a newline).
void KeepError(const char* message, void* user) {
  std::string& last = *static_cast<std::string*>(user);
  last = message != nullptr ? message : "";
  while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
}
void Ignore(const char*, void*) {}

void Quiet(opj_codec_t* codec, std::string* last_error) {
  opj_set_info_handler(codec, Ignore, nullptr);
  opj_set_warning_handler(codec, Ignore, nullptr);
  opj_set_error_handler(codec, KeepError, last_error);
}

// A read-only stream over bytes in memory.
struct Reader {
  absl::Span<const std::uint8_t> bytes;
  std::size_t at = 0;
};
OPJ_SIZE_T ReadBytes(void* buffer, OPJ_SIZE_T n, void* user) {
  Reader& r = *static_cast<Reader*>(user);
  if (r.at >= r.bytes.size()) return static_cast<OPJ_SIZE_T>(-1);  // the end
  n = std::min<OPJ_SIZE_T>(n, r.bytes.size() - r.at);
  std::memcpy(buffer, r.bytes.data() + r.at, n);
  r.at += n;
  return n;
}
OPJ_OFF_T SkipBytes(OPJ_OFF_T n, void* user) {
  Reader& r = *static_cast<Reader*>(user);
  if (n < 0 || static_cast<std::uint64_t>(n) > r.bytes.size() - r.at) return -1;
  r.at += static_cast<std::size_t>(n);
  return n;
}
OPJ_BOOL SeekBytes(OPJ_OFF_T n, void* user) {
  Reader& r = *static_cast<Reader*>(user);
  if (n < 0 || static_cast<std::uint64_t>(n) > r.bytes.size()) return OPJ_FALSE;
  r.at = static_cast<std::size_t>(n);
  return OPJ_TRUE;
}

// A growing write-only stream into memory.
struct Writer {
  std::vector<std::uint8_t> bytes;
  std::size_t at = 0;
};
OPJ_SIZE_T WriteBytes(void* buffer, OPJ_SIZE_T n, void* user) {
  Writer& w = *static_cast<Writer*>(user);
  if (w.bytes.size() < w.at + n) w.bytes.resize(w.at + n);
  std::memcpy(w.bytes.data() + w.at, buffer, n);
  w.at += n;
  return n;
}
OPJ_OFF_T SkipWritten(OPJ_OFF_T n, void* user) {
  Writer& w = *static_cast<Writer*>(user);
  if (n < 0 && static_cast<std::uint64_t>(-n) > w.at) return -1;
  w.at = static_cast<std::size_t>(static_cast<OPJ_OFF_T>(w.at) + n);
  if (w.bytes.size() < w.at) w.bytes.resize(w.at);
  return n;
}
OPJ_BOOL SeekWritten(OPJ_OFF_T n, void* user) {
  Writer& w = *static_cast<Writer*>(user);
  if (n < 0) return OPJ_FALSE;
  w.at = static_cast<std::size_t>(n);
  if (w.bytes.size() < w.at) w.bytes.resize(w.at);
  return OPJ_TRUE;
}

absl::Status OpjError(absl::string_view step, const std::string& last_error) {
  return absl::InvalidArgumentError(
      absl::StrCat("OpenJPEG ", step, last_error.empty() ? "" : ": ", last_error));
}

}  // namespace

absl::Status DecodeJ2kFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                            absl::Span<std::uint8_t> out) {
  // The size is checked before OpenJPEG allocates anything for it.
  absl::StatusOr<J2kSiz> siz = ReadJ2kSiz(frame);
  if (!siz.ok()) return siz.status();
  if (absl::Status s = CheckJ2kSiz(*siz, d); !s.ok()) return s;

  std::string last_error;
  Codec codec(opj_create_decompress(siz->jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K));
  if (codec == nullptr) return absl::ResourceExhaustedError("no memory for an OpenJPEG decoder");
  Quiet(codec.get(), &last_error);
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  if (!opj_setup_decoder(codec.get(), &parameters) ||
      !opj_decoder_set_strict_mode(codec.get(), OPJ_TRUE)) {
    return absl::InternalError(absl::StrCat("OpenJPEG setup: ", last_error));
  }
  Reader reader{frame, 0};
  Stream stream(opj_stream_create(64 * 1024, OPJ_TRUE));
  if (stream == nullptr) return absl::ResourceExhaustedError("no memory for an OpenJPEG stream");
  opj_stream_set_read_function(stream.get(), ReadBytes);
  opj_stream_set_skip_function(stream.get(), SkipBytes);
  opj_stream_set_seek_function(stream.get(), SeekBytes);
  opj_stream_set_user_data(stream.get(), &reader, nullptr);
  opj_stream_set_user_data_length(stream.get(), frame.size());

  opj_image_t* raw_image = nullptr;
  const bool header = opj_read_header(stream.get(), codec.get(), &raw_image);
  OpjImage image(raw_image);
  if (!header || image == nullptr) return OpjError("header", last_error);
  if (!opj_decode(codec.get(), stream.get(), image.get()) ||
      !opj_end_decompress(codec.get(), stream.get())) {
    return OpjError("decode", last_error);
  }
  const opj_image_comp_t& c = image->comps[0];
  if (image->numcomps != 1 || c.w != static_cast<OPJ_UINT32>(d.columns) ||
      c.h != static_cast<OPJ_UINT32>(d.rows) || c.data == nullptr) {
    return absl::InvalidArgumentError("OpenJPEG decoded another image than the header described");
  }
  StoreSamples(StoredBitsOf(d), c.data, static_cast<std::size_t>(d.rows) * d.columns, 0, out);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::uint8_t>> EncodeJ2kLossless(const ImageView& image) {
  const int width = static_cast<int>(image.extent.width);
  const int height = static_cast<int>(image.extent.height);
  opj_image_cmptparm_t component{};
  component.dx = component.dy = 1;
  component.w = static_cast<OPJ_UINT32>(width);
  component.h = static_cast<OPJ_UINT32>(height);
  component.prec = image.type == PixelType::kU8 ? 8 : 16;
  component.sgnd = image.type == PixelType::kI16 ? 1 : 0;
  OpjImage j2k(opj_image_create(1, &component, OPJ_CLRSPC_GRAY));
  if (j2k == nullptr) return absl::ResourceExhaustedError("no memory for an OpenJPEG image");
  j2k->x0 = j2k->y0 = 0;
  j2k->x1 = component.w;
  j2k->y1 = component.h;
  const std::size_t count = static_cast<std::size_t>(width) * height;
  OPJ_INT32* data = j2k->comps[0].data;
  for (std::size_t i = 0; i < count; ++i) {
    data[i] = image.type == PixelType::kU8    ? image.As<const std::uint8_t>()[i]
              : image.type == PixelType::kU16 ? image.As<const std::uint16_t>()[i]
                                              : image.As<const std::int16_t>()[i];
  }

  opj_cparameters_t parameters;
  opj_set_default_encoder_parameters(&parameters);
  parameters.tcp_numlayers = 1;
  parameters.tcp_rates[0] = 0;  // no rate target: every bit plane, lossless
  parameters.cp_disto_alloc = 1;
  parameters.irreversible = 0;
  parameters.numresolution = 1 + LosslessDecompositions(width, height);
  parameters.cblockw_init = parameters.cblockh_init = 64;
  parameters.prog_order = OPJ_RPCL;
  parameters.tcp_mct = 0;

  std::string last_error;
  Codec codec(opj_create_compress(OPJ_CODEC_J2K));
  if (codec == nullptr) return absl::ResourceExhaustedError("no memory for an OpenJPEG encoder");
  Quiet(codec.get(), &last_error);
  if (!opj_setup_encoder(codec.get(), &parameters, j2k.get())) {
    return absl::InternalError(absl::StrCat("OpenJPEG encoder setup: ", last_error));
  }
  Writer writer;
  writer.bytes.reserve(count * PixelSize(image.type) / 2);
  Stream stream(opj_stream_create(64 * 1024, OPJ_FALSE));
  if (stream == nullptr) return absl::ResourceExhaustedError("no memory for an OpenJPEG stream");
  opj_stream_set_write_function(stream.get(), WriteBytes);
  opj_stream_set_skip_function(stream.get(), SkipWritten);
  opj_stream_set_seek_function(stream.get(), SeekWritten);
  opj_stream_set_user_data(stream.get(), &writer, nullptr);
  if (!opj_start_compress(codec.get(), j2k.get(), stream.get()) ||
      !opj_encode(codec.get(), stream.get()) || !opj_end_compress(codec.get(), stream.get())) {
    return absl::InternalError(absl::StrCat("OpenJPEG encode: ", last_error));
  }
  return std::move(writer.bytes);
}

}  // namespace cuimg
