#include "client/io/dicom_load.h"

#include <dcmtk/oflog/oflog.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;

constexpr char kDeflated[] = "1.2.840.10008.1.2.1.99";

std::uint32_t Le32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

// The offset where a Part 10 file's dataset starts when its meta header says deflated; 0 for
// anything else (DCMTK reads those itself). The meta header is the explicit VR little endian
// elements of group 0002 after "DICM"; its group length (0002,0000) is not trusted, as DCMTK
// reads on without it.
std::uintmax_t DeflatedDatasetOffset(const std::vector<unsigned char>& head) {
  if (head.size() < 140 || std::memcmp(head.data() + 128, "DICM", 4) != 0) return 0;
  std::string uid;
  std::size_t pos = 132;
  while (pos + 8 <= head.size() && (head[pos] | head[pos + 1] << 8) == 0x0002) {
    const std::uint32_t tag = Le32(head.data() + pos);
    const char* vr = reinterpret_cast<const char*>(head.data() + pos + 4);
    const bool long_length = std::memcmp(vr, "OB", 2) == 0 || std::memcmp(vr, "OW", 2) == 0 ||
                             std::memcmp(vr, "OF", 2) == 0 || std::memcmp(vr, "SQ", 2) == 0 ||
                             std::memcmp(vr, "UN", 2) == 0 || std::memcmp(vr, "UT", 2) == 0;
    if (long_length && pos + 12 > head.size()) return 0;
    const std::uint32_t length =
        long_length ? Le32(head.data() + pos + 8) : (head[pos + 6] | head[pos + 7] << 8);
    const std::size_t value = pos + (long_length ? 12 : 8);
    if (length > head.size() - value) return 0;  // runs past what was read: not walkable
    if (tag == 0x00100002u) {  // (0002,0010) TransferSyntaxUID, little-endian group first
      uid.assign(reinterpret_cast<const char*>(head.data() + value), length);
      while (!uid.empty() && (uid.back() == '\0' || uid.back() == ' ')) uid.pop_back();
    }
    pos = value + length;
  }
  return uid == kDeflated ? pos : 0;
}

// True when the deflated transfer syntax's UID appears in the file's first bytes: DCMTK may then
// inflate the dataset itself, into memory, reading every value at its declared length (no
// deferred loading from a stream it inflates), which a hostile length turns into gigabytes.
bool MentionsDeflated(const std::vector<unsigned char>& head) {
  const std::size_t n = sizeof(kDeflated) - 1;
  for (std::size_t i = 0; i + n <= head.size(); ++i) {
    if (std::memcmp(head.data() + i, kDeflated, n) == 0) return true;
  }
  return false;
}

// Removes the file when it goes out of scope.
class TempPath {
 public:
  TempPath() {
    static std::atomic<int> counter{0};
    path_ = (fs::temp_directory_path() / absl::StrCat("cuimg-inflated-", getpid(), "-", counter++))
                .string();
  }
  ~TempPath() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Raw deflate (RFC 1951, as the standard and DCMTK write it) from `in` at `offset` into `out`.
absl::Status Inflate(const std::string& file, std::ifstream& in, std::uintmax_t offset,
                     const std::string& out_path, std::uintmax_t limit, std::uintmax_t* written) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InternalError(absl::StrCat(out_path, ": cannot create"));
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return absl::InternalError("zlib: inflateInit2");
  std::vector<unsigned char> input(1 << 16), output(1 << 16);
  int rc = Z_OK;
  *written = 0;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0) {
      in.read(reinterpret_cast<char*>(input.data()), static_cast<std::streamsize>(input.size()));
      z.next_in = input.data();
      z.avail_in = static_cast<uInt>(in.gcount());
      if (z.avail_in == 0) break;  // the stream ends without its final block
    }
    z.next_out = output.data();
    z.avail_out = static_cast<uInt>(output.size());
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    const std::size_t produced = output.size() - z.avail_out;
    *written += produced;
    if (*written > limit) {
      inflateEnd(&z);
      return absl::OutOfRangeError(
          absl::StrCat(file, ": deflated dataset inflates to more than ", limit, " bytes"));
    }
    out.write(reinterpret_cast<const char*>(output.data()), static_cast<std::streamsize>(produced));
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || !out) {
    return absl::DataLossError(absl::StrCat(file, ": the deflated dataset does not inflate"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadDicomFile(const std::string& file, bool until_pixel_data,
                           std::uintmax_t max_inflated_bytes, DcmFileFormat* format,
                           DicomLoad* load) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(file, ": cannot open"));
  std::vector<unsigned char> head(1 << 16);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  load->part10 = head.size() >= 132 && std::memcmp(head.data() + 128, "DICM", 4) == 0;
  const DcmTagKey stop = until_pixel_data ? DCM_PixelData : DCM_UndefinedTagKey;
  std::error_code ec;
  const std::uintmax_t file_bytes = fs::file_size(file, ec);
  if (const std::uintmax_t offset = DeflatedDatasetOffset(head); offset > 0) {
    TempPath inflated;
    if (absl::Status s =
            Inflate(file, in, offset, inflated.path(), max_inflated_bytes, &load->dataset_bytes);
        !s.ok()) {
      return s;
    }
    load->deflated = true;
    if (OFCondition c =
            format->loadFileUntilTag(inflated.path().c_str(), EXS_LittleEndianExplicit,
                                     EGL_noChange, DCM_MaxReadLength, ERM_dataset, stop);
        c.bad()) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": ", c.text()));
    }
    // Values left in the temporary file must be read before it goes.
    if (format->loadAllDataIntoMemory().bad()) {
      return absl::DataLossError(absl::StrCat(file, ": the inflated dataset is short"));
    }
    return absl::OkStatus();
  }
  // Deflated, by the look of it, but not as we can walk the meta header: never DCMTK's inflation.
  if (MentionsDeflated(head)) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": names the deflated transfer syntax (", kDeflated,
                     ") but its meta header (group 0002 after DICM) cannot be read"));
  }
  load->deflated = false;
  load->dataset_bytes = ec ? 0 : file_bytes;
  if (OFCondition c = format->loadFileUntilTag(file.c_str(), EXS_Unknown, EGL_noChange,
                                               DCM_MaxReadLength, ERM_autoDetect, stop);
      c.bad()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", c.text()));
  }
  return absl::OkStatus();
}

std::string LoadFailureReason(const absl::Status& status, const std::string& file) {
  const std::string prefix = file + ": ";
  const std::string message(status.message());
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

void QuietDcmtkLog() {
  static std::once_flag once;
  std::call_once(once, [] { OFLog::configure(OFLogger::FATAL_LOG_LEVEL); });
}

}  // namespace cuimg
