#include "client/io/image_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/io/atomic_output.h"
#include "client/io/tiff_file.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

bool HasImageExtension(const std::string& path, bool encoded_only) {
  const std::string lower = absl::AsciiStrToLower(path);
  for (const char* ext : {".png", ".jpg", ".jpeg"}) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  if (encoded_only) return false;
  for (const char* ext : {".tif", ".tiff", ".npy", ".nrrd", ".nhdr"}) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  return false;
}

}  // namespace

bool IsEncodedImagePath(const std::string& path) { return HasImageExtension(path, true); }

absl::StatusOr<std::vector<std::string>> ImageFilesIn(const std::string& path,
                                                      const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(path, error)) return std::vector<std::string>{};
  std::vector<std::string> paths;
  for (const fs::directory_entry& e : fs::directory_iterator(path, error)) {
    if (e.is_regular_file(error) && HasImageExtension(e.path().string(), false)) {
      paths.push_back(e.path().string());
    }
  }
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, ": ", error.message()));
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

absl::StatusOr<std::vector<std::uint8_t>> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  // In one read of the size the file has: a byte at a time, a 157 MB volume took 0.3 s.
  std::vector<std::uint8_t> bytes;
  in.seekg(0, std::ios::end);
  if (const std::streamoff size = in ? std::streamoff(in.tellg()) : -1; size > 0 && in.seekg(0)) {
    bytes.resize(static_cast<std::size_t>(size));
    in.read(reinterpret_cast<char*>(bytes.data()), size);
    bytes.resize(static_cast<std::size_t>(in.gcount()));
  } else {
    in.clear();
    in.seekg(0);  // fails on a pipe, which has not moved
    in.clear();
  }
  // What the size did not tell (a pipe, a file that grew).
  if (!in.eof()) bytes.insert(bytes.end(), std::istreambuf_iterator<char>(in), {});
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return bytes;
}

absl::Status WriteFileBytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  return WriteAtomically(path, OutputKind::kFile, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat(temp, ": cannot create"));
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();  // flushes: a failure shows here, not in the destructor
    if (!out) return absl::DataLossError(absl::StrCat(temp, ": write failed"));
    return absl::OkStatus();
  });
}

absl::StatusOr<Image> ReadImageFile(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".tif") || absl::EndsWith(lower, ".tiff")) return ReadTiff(path);
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadFileBytes(path));
  absl::StatusOr<Image> image = DecodeImage(bytes);
  if (!image.ok()) {
    return absl::Status(image.status().code(), absl::StrCat(path, ": ", image.status().message()));
  }
  return image;
}

absl::Status WriteImageFile(const std::string& path, const ImageView& image) {
  const std::string lower = absl::AsciiStrToLower(path);
  absl::StatusOr<std::vector<std::uint8_t>> bytes;
  if (absl::EndsWith(lower, ".png")) {
    bytes = EncodePng(image);
  } else if (absl::EndsWith(lower, ".jpg") || absl::EndsWith(lower, ".jpeg")) {
    bytes = EncodeJpeg(image);
  } else if (absl::EndsWith(lower, ".tif") || absl::EndsWith(lower, ".tiff")) {
    return WriteTiff(path, image);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unknown extension (use .png, .jpg or .tif)"));
  }
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(), absl::StrCat(path, ": ", bytes.status().message()));
  }
  return WriteFileBytes(path, *bytes);
}

}  // namespace cuimg
