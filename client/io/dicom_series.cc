#include "client/io/dicom_series.h"

#include <dcmtk/config/osconfig.h>  // first, as DCMTK requires
#include <dcmtk/dcmdata/dctk.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/io/dicom_load.h"
#include "client/io/dicom_pixels.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using Vec3 = std::array<double, 3>;

// One volume slice: a frame of a file.
struct Slice {
  std::string file;
  int frame = 0;
  Vec3 ipp{};
  double position = 0;  // along the normal
  double slope = 1, intercept = 0;
};

// What every slice of the series must share.
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

// The value of `tag` (its value `pos`) for frame `frame`: an enhanced object keeps it in the
// macro sequence `macro` of its per-frame functional group item, or of the shared one; a
// single-frame object at the top level.
bool FrameValue(DcmItem* ds, long frame, const DcmTagKey& macro, const DcmTagKey& tag,
                unsigned long pos, Float64* value) {
  for (const bool per_frame : {true, false}) {
    DcmItem* group = nullptr;
    if (ds->findAndGetSequenceItem(
              per_frame ? DCM_PerFrameFunctionalGroupsSequence : DCM_SharedFunctionalGroupsSequence,
              group, per_frame ? frame : 0)
            .bad() ||
        group == nullptr) {
      continue;
    }
    DcmItem* item = nullptr;
    if (group->findAndGetSequenceItem(macro, item, 0).good() && item != nullptr &&
        item->findAndGetFloat64(tag, *value, pos).good()) {
      return true;
    }
  }
  return ds->findAndGetFloat64(tag, *value, pos).good();
}

// Series-wide fields and the geometry of frame `frame` (its position, spacing, orientation and
// rescale, which an enhanced object may give per frame).
absl::Status ReadFrameHeader(DcmDataset* ds, const std::string& file, int frame, SeriesHeader* h,
                             Slice* slice) {
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
    if (!FrameValue(ds, frame, DCM_PixelMeasuresSequence, DCM_PixelSpacing, i,
                    &h->pixel_spacing[i])) {
      return Invalid(file, absl::StrCat("no PixelSpacing for frame ", frame + 1));
    }
  }
  for (unsigned i = 0; i < 6; ++i) {
    if (!FrameValue(ds, frame, DCM_PlaneOrientationSequence, DCM_ImageOrientationPatient, i,
                    &h->iop[i])) {
      return Invalid(file, absl::StrCat("no ImageOrientationPatient for frame ", frame + 1));
    }
  }
  for (unsigned i = 0; i < 3; ++i) {
    if (!FrameValue(ds, frame, DCM_PlanePositionSequence, DCM_ImagePositionPatient, i,
                    &slice->ipp[i])) {
      return Invalid(file, absl::StrCat("no ImagePositionPatient for frame ", frame + 1));
    }
  }
  if (!FrameValue(ds, frame, DCM_PixelValueTransformationSequence, DCM_RescaleSlope, 0,
                  &slice->slope)) {
    slice->slope = 1;
  }
  if (!FrameValue(ds, frame, DCM_PixelValueTransformationSequence, DCM_RescaleIntercept, 0,
                  &slice->intercept)) {
    slice->intercept = 0;
  }
  if (!std::isfinite(slice->slope) || !std::isfinite(slice->intercept) || slice->slope == 0) {
    return Invalid(file, "RescaleSlope is 0 or not finite, or RescaleIntercept not finite");
  }
  return absl::OkStatus();
}

struct PixelModule {
  int bits_allocated = 16;
  int bits_stored = 16;
  bool is_signed = false;
  int frames = 1;
};

absl::StatusOr<PixelModule> ReadPixelModule(DcmDataset* ds, const std::string& file) {
  Uint16 bits_allocated = 0, bits_stored = 0, samples = 1, representation = 0;
  ds->findAndGetUint16(DCM_BitsAllocated, bits_allocated);
  ds->findAndGetUint16(DCM_SamplesPerPixel, samples);
  ds->findAndGetUint16(DCM_PixelRepresentation, representation);
  if (ds->findAndGetUint16(DCM_BitsStored, bits_stored).bad()) bits_stored = bits_allocated;
  Sint32 frames = 1;
  if (ds->findAndGetSint32(DCM_NumberOfFrames, frames).bad()) frames = 1;
  if ((bits_allocated != 8 && bits_allocated != 16) || samples != 1) {
    return absl::UnimplementedError(absl::StrCat(
        file, ": ", bits_allocated, " bits allocated, ", samples,
        " samples per pixel (cuimg reads grayscale slices of 8 or 16 bits allocated)"));
  }
  if (bits_stored < 1 || bits_stored > bits_allocated) {
    return Invalid(file, absl::StrCat("BitsStored ", bits_stored, " not in [1, BitsAllocated]"));
  }
  if (frames < 1 || frames > 65536) return Invalid(file, "NumberOfFrames not in [1, 65536]");
  return PixelModule{bits_allocated, bits_stored, representation == 1, static_cast<int>(frames)};
}

// Frame `frame` of `pixels` into `out` (rows * columns values): masked to BitsStored,
// sign-extended, rescaled; I16 out checks the range, F32 out takes the value as it is.
absl::Status RescaleFrame(const DicomPixels& pixels, const PixelModule& module, const Slice& slice,
                          std::size_t index, PixelType type, void* out) {
  const std::size_t count = std::size_t(pixels.columns) * pixels.rows;
  const std::uint16_t* stored = pixels.stored.data() + count * slice.frame;
  // Bits above BitsStored may hold anything (old overlays): mask them, then sign-extend.
  const std::uint32_t mask = module.bits_stored == 16 ? 0xffffu : ((1u << module.bits_stored) - 1);
  const std::uint32_t sign = 1u << (module.bits_stored - 1);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t raw = stored[i] & mask;
    const double value = module.is_signed && (raw & sign) != 0
                             ? static_cast<double>(static_cast<std::int64_t>(raw) - (mask + 1))
                             : static_cast<double>(raw);
    if (type == PixelType::kF32) {
      static_cast<float*>(out)[i] = static_cast<float>(value * slice.slope + slice.intercept);
      continue;
    }
    const double units = std::nearbyint(value * slice.slope + slice.intercept);
    if (units < -32768 || units > 32767) {
      return absl::OutOfRangeError(absl::StrFormat(
          "%s (slice %d): stored %g * slope %g + intercept %g = %g does not fit i16 [-32768, "
          "32767]; cuimg sends DICOM series of integer rescale as i16",
          slice.file, index, value, slice.slope, slice.intercept, units));
    }
    static_cast<std::int16_t*>(out)[i] = static_cast<std::int16_t>(units);
  }
  return absl::OkStatus();
}

bool IsInteger(double v) { return v == std::nearbyint(v); }

}  // namespace

absl::StatusOr<DicomSeries> ReadDicomSeries(const std::string& directory,
                                            const DicomReadOptions& options) {
  QuietDcmtkLog();
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
  std::map<std::string, PixelModule> modules;  // per file
  std::set<std::string> other_series;
  for (const std::string& file : candidates) {
    DcmFileFormat format;
    DicomLoad load;
    // A deflated dataset may inflate to the volume's bytes and its headers, not more.
    const std::uintmax_t max_inflated =
        static_cast<std::uintmax_t>(options.max_voxels) * 2 + (std::uintmax_t{64} << 20);
    if (absl::Status s = LoadDicomFile(file, true, max_inflated, &format, &load); !s.ok()) {
      if (s.code() == absl::StatusCode::kInvalidArgument) continue;  // not DICOM
      return s;
    }
    DcmDataset* ds = format.getDataset();
    if (!ds->tagExists(DCM_Rows)) continue;  // DICOMDIR, reports, presentation states
    OFString uid;
    ds->findAndGetOFString(DCM_SeriesInstanceUID, uid);
    if (!options.series_uid.empty() && options.series_uid != uid.c_str()) {
      other_series.insert(uid.c_str());
      continue;
    }
    absl::StatusOr<PixelModule> module = ReadPixelModule(ds, file);
    if (!module.ok()) return module.status();
    // Uncompressed pixels need Rows * Columns * frames * bytes: a header that claims more than
    // the file holds is refused here, before the volume is allocated from it. (A compressed
    // stream has no such bound; options.max_voxels bounds what it may allocate.)
    const DcmXfer xfer(ds->getOriginalXfer());
    Uint16 rows = 0, columns = 0;
    ds->findAndGetUint16(DCM_Rows, rows);
    ds->findAndGetUint16(DCM_Columns, columns);
    if (!xfer.isEncapsulated() && xfer.getStreamCompression() == ESC_none) {
      const std::uintmax_t pixel_bytes =
          std::uintmax_t{rows} * columns * module->frames * (module->bits_allocated / 8);
      if (load.dataset_bytes < pixel_bytes) {
        return absl::DataLossError(absl::StrCat(file, ": ", columns, "x", rows, "x", module->frames,
                                                " pixels need ", pixel_bytes,
                                                " bytes, the file has ", load.dataset_bytes));
      }
    }
    if (module->frames > 1 && !ds->tagExists(DCM_PerFrameFunctionalGroupsSequence) &&
        !ds->tagExists(DCM_SharedFunctionalGroupsSequence)) {
      return absl::UnimplementedError(absl::StrCat(
          file, ": ", module->frames,
          " frames without functional groups (cuimg reads enhanced multi-frame objects)"));
    }
    for (int frame = 0; frame < module->frames; ++frame) {
      SeriesHeader h;
      Slice slice{file, frame};
      if (absl::Status s = ReadFrameHeader(ds, file, frame, &h, &slice); !s.ok()) return s;
      if (slices.empty()) {
        first = h;
      } else if (h.series_uid != first.series_uid) {
        // The directory is fine; the command must say which series: a usage error.
        return absl::FailedPreconditionError(
            absl::StrCat(directory, ": more than one series (", h.series_uid, " in ", file, ", ",
                         first.series_uid, " in ", slices[0].file,
                         "); pick one with --series_uid or give a directory holding one series"));
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
      if (slices.size() > 65536) {
        return absl::InvalidArgumentError(absl::StrCat(directory, ": more than 65536 slices"));
      }
    }
    modules[file] = *module;
  }
  if (slices.empty()) {
    if (!other_series.empty()) {
      return absl::NotFoundError(absl::StrCat(directory, ": no slice of series ",
                                              options.series_uid, " (it holds ",
                                              absl::StrJoin(other_series, ", "), ")"));
    }
    return absl::NotFoundError(absl::StrCat(directory, ": no DICOM image files"));
  }
  if (std::int64_t{first.rows} * first.columns * static_cast<std::int64_t>(slices.size()) >
      options.max_voxels) {
    return absl::InvalidArgumentError(absl::StrCat(directory, ": more than ", options.max_voxels,
                                                   " voxels (the bound of every volume reader)"));
  }
  const Vec3 row_direction{first.iop[0], first.iop[1], first.iop[2]};
  const Vec3 column_direction{first.iop[3], first.iop[4], first.iop[5]};
  const Vec3 normal = Cross(row_direction, column_direction);
  for (Slice& s : slices)
    s.position = s.ipp[0] * normal[0] + s.ipp[1] * normal[1] + s.ipp[2] * normal[2];
  std::sort(slices.begin(), slices.end(),
            [](const Slice& a, const Slice& b) { return a.position < b.position; });

  DicomSeries series;
  std::vector<double> gaps;
  for (std::size_t i = 1; i < slices.size(); ++i) {
    const double gap = slices[i].position - slices[i - 1].position;
    if (gap < 1e-4) {
      return Invalid(slices[i].file,
                     absl::StrCat("frame ", slices[i].frame + 1, " at the same position as ",
                                  slices[i - 1].file, " along the slice normal"));
    }
    gaps.push_back(gap);
  }
  if (!gaps.empty()) {
    std::vector<double> sorted = gaps;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double median = sorted[sorted.size() / 2];
    series.spacing.z_mm = median;
    for (double g : gaps)
      series.gap_deviation_mm = std::max(series.gap_deviation_mm, std::fabs(g - median));
  }
  series.spacing.x_mm = first.pixel_spacing[1];
  series.spacing.y_mm = first.pixel_spacing[0];
  series.geometry.known = true;
  series.geometry.origin = slices[0].ipp;
  series.geometry.axes = {row_direction, column_direction, normal};

  // Pass 2: pixels, one decode per file, each frame to its volume slice.
  const bool floating = std::any_of(slices.begin(), slices.end(), [](const Slice& s) {
    return !IsInteger(s.slope) || !IsInteger(s.intercept);
  });
  const PixelType type = floating ? PixelType::kF32 : PixelType::kI16;
  const std::size_t slice_pixels = std::size_t{first.rows} * first.columns;
  series.volume =
      Image(type, Extent{first.columns, first.rows, static_cast<std::int64_t>(slices.size())});
  std::map<std::string, std::vector<std::size_t>> by_file;
  for (std::size_t z = 0; z < slices.size(); ++z) by_file[slices[z].file].push_back(z);
  for (const auto& [file, indices] : by_file) {
    const PixelModule& module = modules[file];
    absl::StatusOr<DicomPixels> pixels =
        DecodeDicomPixels(file, first.columns, first.rows, module.frames);
    if (!pixels.ok()) return pixels.status();
    for (std::size_t z : indices) {
      if (absl::Status s = RescaleFrame(*pixels, module, slices[z], z, type,
                                        series.volume.bytes() + z * slice_pixels * PixelSize(type));
          !s.ok()) {
        return s;
      }
    }
    series.multi_frame = series.multi_frame || module.frames > 1;
  }
  for (const Slice& s : slices) {
    series.files.push_back(s.file);
    series.frames.push_back(s.frame);
    series.slopes.push_back(s.slope);
    series.intercepts.push_back(s.intercept);
  }
  series.extent = series.volume.extent();
  return series;
}

}  // namespace cuimg
