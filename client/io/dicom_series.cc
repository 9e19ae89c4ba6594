#include "client/io/dicom_series.h"

#include <dcmtk/config/osconfig.h>  // first, as DCMTK requires
#include <dcmtk/dcmdata/dctk.h>
#include <dcmtk/oflog/oflog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using Vec3 = std::array<double, 3>;

// DCMTK's own warnings can quote element values; patient fields must never reach a log.
void QuietDcmtk() {
  static std::once_flag once;
  std::call_once(once, [] { OFLog::configure(OFLogger::FATAL_LOG_LEVEL); });
}

struct Slice {
  std::string file;
  double position = 0;  // along the normal
  Vec3 ipp{};
};

struct SeriesHeader {
  std::string series_uid;
  Uint16 rows = 0, columns = 0;
  std::array<double, 2> pixel_spacing{};  // row spacing (y), column spacing (x)
  std::array<double, 6> iop{};
};

Vec3 Cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

absl::Status Invalid(const std::string& file, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", why));
}

absl::Status ReadHeader(DcmDataset* ds, const std::string& file, SeriesHeader* h, Vec3* ipp) {
  OFString uid;
  if (ds->findAndGetOFString(DCM_SeriesInstanceUID, uid).bad()) {
    return Invalid(file, "no SeriesInstanceUID");
  }
  h->series_uid = uid.c_str();
  if (ds->findAndGetUint16(DCM_Rows, h->rows).bad() ||
      ds->findAndGetUint16(DCM_Columns, h->columns).bad() || h->rows == 0 || h->columns == 0) {
    return Invalid(file, "no Rows/Columns");
  }
  for (unsigned i = 0; i < 2; ++i) {
    if (ds->findAndGetFloat64(DCM_PixelSpacing, h->pixel_spacing[i], i).bad()) {
      return Invalid(file, "no PixelSpacing");
    }
  }
  for (unsigned i = 0; i < 6; ++i) {
    if (ds->findAndGetFloat64(DCM_ImageOrientationPatient, h->iop[i], i).bad()) {
      return Invalid(file, "no ImageOrientationPatient");
    }
  }
  for (unsigned i = 0; i < 3; ++i) {
    if (ds->findAndGetFloat64(DCM_ImagePositionPatient, (*ipp)[i], i).bad()) {
      return Invalid(file, "no ImagePositionPatient");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPixelModule(DcmDataset* ds, const std::string& file) {
  if (DcmXfer(ds->getOriginalXfer()).isEncapsulated()) {
    return absl::UnimplementedError(absl::StrCat(
        file, ": compressed pixel data (", DcmXfer(ds->getOriginalXfer()).getXferName(),
        "); decompress first, e.g. with DCMTK's dcmdjpeg or dcmdjpls"));
  }
  Uint16 bits_allocated = 0, samples = 1;
  ds->findAndGetUint16(DCM_BitsAllocated, bits_allocated);
  ds->findAndGetUint16(DCM_SamplesPerPixel, samples);
  Sint32 frames = 1;
  ds->findAndGetSint32(DCM_NumberOfFrames, frames);
  if (bits_allocated != 16 || samples != 1 || frames > 1) {
    return absl::UnimplementedError(absl::StrCat(
        file, ": ", bits_allocated, " bits allocated, ", samples, " samples, ", frames,
        " frames (cuimg reads single-frame 16-bit grayscale slices)"));
  }
  return absl::OkStatus();
}

// The slice's stored values, rescaled and rounded, into `out` (rows * columns values).
absl::Status DecodeSlice(DcmDataset* ds, const std::string& file, std::size_t index,
                         std::size_t count, std::int16_t* out) {
  const Uint16* stored = nullptr;
  unsigned long n = 0;
  if (ds->findAndGetUint16Array(DCM_PixelData, stored, &n).bad() || stored == nullptr ||
      n < count) {
    return absl::DataLossError(absl::StrCat(file, ": pixel data missing or short"));
  }
  Uint16 bits_stored = 16, pixel_representation = 0;
  ds->findAndGetUint16(DCM_BitsStored, bits_stored);
  ds->findAndGetUint16(DCM_PixelRepresentation, pixel_representation);
  if (bits_stored < 1 || bits_stored > 16) return Invalid(file, "BitsStored not in [1, 16]");
  Float64 slope = 1, intercept = 0;
  if (ds->findAndGetFloat64(DCM_RescaleSlope, slope).bad()) slope = 1;
  if (ds->findAndGetFloat64(DCM_RescaleIntercept, intercept).bad()) intercept = 0;
  // Bits above BitsStored may hold anything (old overlays): mask them, then sign-extend.
  const std::uint32_t mask = bits_stored == 16 ? 0xffffu : ((1u << bits_stored) - 1);
  const std::uint32_t sign = 1u << (bits_stored - 1);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t raw = stored[i] & mask;
    const double value = pixel_representation == 1 && (raw & sign) != 0
                             ? static_cast<double>(static_cast<std::int64_t>(raw) - (mask + 1))
                             : static_cast<double>(raw);
    const double units = std::nearbyint(value * slope + intercept);
    if (units < -32768 || units > 32767) {
      return absl::OutOfRangeError(absl::StrFormat(
          "%s (slice %d): stored %g * slope %g + intercept %g = %g does not fit i16 [-32768, "
          "32767]; cuimg sends DICOM series as i16",
          file, index, value, slope, intercept, units));
    }
    out[i] = static_cast<std::int16_t>(units);
  }
  return absl::OkStatus();
}

std::string NewUid(const char* root) {
  char uid[100];
  dcmGenerateUniqueIdentifier(uid, root);
  return uid;
}

absl::Status Put(DcmDataset* ds, const DcmTagKey& tag, const std::string& value,
                 const std::string& file) {
  if (ds->putAndInsertOFStringArray(tag, value.c_str()).bad()) {
    return absl::InternalError(absl::StrCat(file, ": cannot set ", DcmTag(tag).getTagName()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DicomSeries> ReadDicomSeries(const std::string& directory) {
  QuietDcmtk();
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    return absl::NotFoundError(absl::StrCat(directory, ": not a directory"));
  }
  std::vector<std::string> candidates;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec)) {
    if (entry.is_regular_file()) candidates.push_back(entry.path().string());
  }
  std::sort(candidates.begin(), candidates.end());

  // Pass 1: headers only (stop before the pixels), checks and the sort key.
  SeriesHeader first;
  std::vector<Slice> slices;
  for (const std::string& file : candidates) {
    DcmFileFormat format;
    if (format.loadFileUntilTag(file.c_str(), EXS_Unknown, EGL_noChange, DCM_MaxReadLength,
                                ERM_autoDetect, DCM_PixelData).bad()) {
      continue;  // not DICOM
    }
    DcmDataset* ds = format.getDataset();
    if (!ds->tagExists(DCM_Rows) || !ds->tagExists(DCM_ImagePositionPatient)) continue;  // DICOMDIR etc.
    SeriesHeader h;
    Slice slice{file, 0, {}};
    if (absl::Status s = ReadHeader(ds, file, &h, &slice.ipp); !s.ok()) return s;
    if (absl::Status s = CheckPixelModule(ds, file); !s.ok()) return s;
    // Uncompressed 16-bit pixels need Rows * Columns * 2 bytes: a header that claims more than
    // the file holds is refused here, before the volume is allocated from it.
    const std::uintmax_t pixel_bytes = std::uintmax_t{h.rows} * h.columns * 2;
    std::error_code size_error;
    const std::uintmax_t file_bytes = fs::file_size(file, size_error);
    if (size_error || file_bytes < pixel_bytes) {
      return absl::DataLossError(absl::StrCat(file, ": ", h.columns, "x", h.rows,
                                              " pixels need ", pixel_bytes, " bytes, the file has ",
                                              size_error ? 0 : file_bytes));
    }
    if (slices.empty()) {
      first = h;
    } else if (h.series_uid != first.series_uid) {
      return absl::InvalidArgumentError(absl::StrCat(
          directory, ": more than one series (", file, " differs from ", slices[0].file,
          "); give a directory holding one series"));
    } else if (h.rows != first.rows || h.columns != first.columns ||
               std::fabs(h.pixel_spacing[0] - first.pixel_spacing[0]) > 1e-4 ||
               std::fabs(h.pixel_spacing[1] - first.pixel_spacing[1]) > 1e-4) {
      return Invalid(file, "Rows, Columns or PixelSpacing differ from the series' first slice");
    } else {
      for (int i = 0; i < 6; ++i) {
        if (std::fabs(h.iop[i] - first.iop[i]) > 1e-4) {
          return Invalid(file, "ImageOrientationPatient differs from the series' first slice");
        }
      }
    }
    slices.push_back(std::move(slice));
  }
  if (slices.empty()) {
    return absl::NotFoundError(absl::StrCat(directory, ": no DICOM image files"));
  }
  if (slices.size() > 65536) return absl::InvalidArgumentError(absl::StrCat(directory, ": more than 65536 slices"));
  if (std::uint64_t{first.rows} * first.columns * slices.size() > (std::uint64_t{1} << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat(directory, ": more than 2^30 voxels (the bound of every volume reader)"));
  }
  const Vec3 normal = Cross({first.iop[0], first.iop[1], first.iop[2]},
                            {first.iop[3], first.iop[4], first.iop[5]});
  for (Slice& s : slices) s.position = s.ipp[0] * normal[0] + s.ipp[1] * normal[1] + s.ipp[2] * normal[2];
  std::sort(slices.begin(), slices.end(),
            [](const Slice& a, const Slice& b) { return a.position < b.position; });

  DicomSeries series;
  std::vector<double> gaps;
  for (std::size_t i = 1; i < slices.size(); ++i) {
    const double gap = slices[i].position - slices[i - 1].position;
    if (gap < 1e-4) {
      return Invalid(slices[i].file, absl::StrCat("same position as ", slices[i - 1].file,
                                                  " along the slice normal"));
    }
    gaps.push_back(gap);
  }
  if (!gaps.empty()) {
    std::vector<double> sorted = gaps;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double median = sorted[sorted.size() / 2];
    series.spacing.z_mm = median;
    for (double g : gaps) series.gap_deviation_mm = std::max(series.gap_deviation_mm, std::fabs(g - median));
  }
  series.spacing.x_mm = first.pixel_spacing[1];
  series.spacing.y_mm = first.pixel_spacing[0];

  // Pass 2: pixels, in volume order.
  const std::size_t slice_pixels = std::size_t{first.rows} * first.columns;
  series.volume = Image(PixelType::kI16, Extent{first.columns, first.rows,
                                                static_cast<std::int64_t>(slices.size())});
  for (std::size_t z = 0; z < slices.size(); ++z) {
    DcmFileFormat format;
    if (OFCondition c = format.loadFile(slices[z].file.c_str()); c.bad()) {
      return absl::DataLossError(absl::StrCat(slices[z].file, ": ", c.text()));
    }
    if (absl::Status s = DecodeSlice(format.getDataset(), slices[z].file, z, slice_pixels,
                                     series.volume.As<std::int16_t>() + z * slice_pixels);
        !s.ok()) {
      return s;
    }
    series.files.push_back(slices[z].file);
  }
  series.extent = series.volume.extent();
  return series;
}

absl::StatusOr<std::string> WriteDicomSeries(const DicomSeries& source, const ImageView& result,
                                             const std::string& directory,
                                             const std::string& derivation) {
  QuietDcmtk();
  if (result.type != PixelType::kI16 || result.channels != 1 ||
      result.extent != source.extent || source.files.size() != static_cast<std::size_t>(source.extent.depth)) {
    return absl::InvalidArgumentError(
        "DICOM output needs a one-channel i16 result of the source series' extent");
  }
  std::error_code ec;
  if (fs::exists(directory, ec) && !fs::is_empty(directory, ec)) {
    return absl::AlreadyExistsError(
        absl::StrCat(directory, ": not empty (a new series needs a directory of its own)"));
  }
  fs::create_directories(directory, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(directory, ": ", ec.message()));

  const std::string series_uid = NewUid(SITE_SERIES_UID_ROOT);
  const std::size_t slice_pixels = static_cast<std::size_t>(result.extent.SlicePixels());
  const auto* pixels = static_cast<const Uint16*>(result.data);
  for (std::size_t z = 0; z < source.files.size(); ++z) {
    const std::string& file = source.files[z];
    DcmFileFormat format;
    if (OFCondition c = format.loadFile(file.c_str()); c.bad()) {
      return absl::DataLossError(absl::StrCat(file, ": ", c.text()));
    }
    DcmDataset* ds = format.getDataset();
    const std::string sop_uid = NewUid(SITE_INSTANCE_UID_ROOT);
    OFString description, series_number, image_type;
    ds->findAndGetOFString(DCM_SeriesDescription, description);
    const std::string new_description =
        (description.empty() ? derivation : absl::StrCat(description.c_str(), " ", derivation))
            .substr(0, 64);  // LO holds 64 characters
    ds->findAndGetOFStringArray(DCM_ImageType, image_type);
    std::string new_image_type = "DERIVED\\SECONDARY";
    // Keep the values after the first two (e.g. AXIAL).
    if (std::size_t at = std::string(image_type.c_str()).find('\\');
        at != std::string::npos) {
      const std::string rest = std::string(image_type.c_str()).substr(at + 1);
      if (std::size_t at2 = rest.find('\\'); at2 != std::string::npos) {
        new_image_type += rest.substr(at2);
      }
    }
    Sint32 number = 0;
    for (const auto& [tag, value] : std::initializer_list<std::pair<DcmTagKey, std::string>>{
             {DCM_SeriesInstanceUID, series_uid},
             {DCM_SOPInstanceUID, sop_uid},
             {DCM_ImageType, new_image_type},
             {DCM_SeriesDescription, new_description},
             {DCM_DerivationDescription, derivation.substr(0, 1024)},
             {DCM_RescaleSlope, "1"},
             {DCM_RescaleIntercept, "0"}}) {
      if (absl::Status s = Put(ds, tag, value, file); !s.ok()) return s;
    }
    if (ds->findAndGetSint32(DCM_SeriesNumber, number).good()) {
      if (absl::Status s = Put(ds, DCM_SeriesNumber, std::to_string(number + 1000), file); !s.ok()) {
        return s;
      }
    }
    // Pixel module: signed 16-bit stored values equal to the rescaled units.
    ds->findAndDeleteElement(DCM_SmallestImagePixelValue);  // their VR follows the old
    ds->findAndDeleteElement(DCM_LargestImagePixelValue);   // PixelRepresentation
    ds->findAndDeleteElement(DCM_PixelPaddingValue);
    if (ds->putAndInsertUint16(DCM_BitsAllocated, 16).bad() ||
        ds->putAndInsertUint16(DCM_BitsStored, 16).bad() ||
        ds->putAndInsertUint16(DCM_HighBit, 15).bad() ||
        ds->putAndInsertUint16(DCM_PixelRepresentation, 1).bad() ||
        ds->putAndInsertUint16Array(DCM_PixelData, pixels + z * slice_pixels,
                                    static_cast<unsigned long>(slice_pixels)).bad()) {
      return absl::InternalError(absl::StrCat(file, ": cannot set the pixel module"));
    }
    const std::string out = (fs::path(directory) / absl::StrFormat("slice_%04d.dcm", z)).string();
    // A new meta header: MediaStorageSOPInstanceUID follows the new SOPInstanceUID.
    if (OFCondition c = format.saveFile(out.c_str(), EXS_LittleEndianExplicit); c.bad()) {
      return absl::DataLossError(absl::StrCat(out, ": ", c.text()));
    }
  }
  return series_uid;
}

}  // namespace cuimg
