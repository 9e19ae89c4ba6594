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
#include "client/io/dicom_frames.h"
#include "client/io/dicom_header.h"
#include "client/io/dicom_load.h"
#include "client/io/dicom_pixels.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using Code = absl::StatusCode;
using Vec3 = std::array<double, 3>;

// One volume slice: a frame of a file.
struct Slice {
  std::string file;
  int frame = 0;
  FrameHeader header;
  double position = 0;  // along the normal
};

Vec3 Cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

// Frame `frame` of `pixels` into `out` (rows * columns values): masked to BitsStored,
// sign-extended, rescaled; I16 out checks the range, F32 out takes the value as it is.
absl::Status RescaleFrame(const DicomPixels& pixels, const PixelModule& module, const Slice& slice,
                          std::size_t index, PixelType type, void* out) {
  const std::size_t count = std::size_t(pixels.columns) * pixels.rows;
  const std::uint16_t* stored = pixels.stored.data() + count * slice.frame;
  const double slope = slice.header.slope, intercept = slice.header.intercept;
  // Bits above BitsStored may hold anything (old overlays): mask them, then sign-extend. The
  // decoded sample's own signedness (a JPEG 2000 codestream's, say) is not consulted.
  const std::uint32_t mask = module.bits_stored == 16 ? 0xffffu : ((1u << module.bits_stored) - 1);
  const std::uint32_t sign = 1u << (module.bits_stored - 1);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t raw = stored[i] & mask;
    const double value = module.is_signed && (raw & sign) != 0
                             ? static_cast<double>(static_cast<std::int64_t>(raw) - (mask + 1))
                             : static_cast<double>(raw);
    if (type == PixelType::kF32) {
      static_cast<float*>(out)[i] = static_cast<float>(value * slope + intercept);
      continue;
    }
    const double units = std::nearbyint(value * slope + intercept);
    if (units < -32768 || units > 32767) {
      return DicomRefusal(
          Code::kOutOfRange, ErrorReason::kValueOutOfRange, slice.file, "PixelData",
          absl::StrFormat("(slice %d) stored %g * slope %g + intercept %g = %g does not fit i16 "
                          "[-32768, 32767]; cuimg reads integer rescales as i16, never clamped",
                          index, value, slope, intercept, units));
    }
    static_cast<std::int16_t*>(out)[i] = static_cast<std::int16_t>(units);
  }
  return absl::OkStatus();
}

bool IsInteger(double v) { return v == std::nearbyint(v); }

// What every slice of the series must share with the first, checked as each is read.
absl::Status CheckSameSeries(const Slice& first, const std::string& first_uid, Uint16 first_rows,
                             Uint16 first_columns, const Slice& slice, const std::string& uid,
                             Uint16 rows, Uint16 columns, const std::string& directory) {
  if (uid != first_uid) {
    // The files are fine; the command must say which series: a usage error.
    return absl::FailedPreconditionError(absl::StrCat(
        directory, ": more than one series (", uid, " in ", slice.file, ", ", first_uid, " in ",
        first.file, "); pick one with --series_uid or give a directory holding one series"));
  }
  if (rows != first_rows || columns != first_columns) {
    return DicomRefusal(Code::kInvalidArgument, ErrorReason::kShapeMismatch, slice.file, "Rows",
                        "Rows or Columns differ from the series' first slice");
  }
  const auto& a = slice.header;
  const auto& b = first.header;
  if (a.pixel_spacing && b.pixel_spacing &&
      (std::fabs((*a.pixel_spacing)[0] - (*b.pixel_spacing)[0]) > 1e-4 ||
       std::fabs((*a.pixel_spacing)[1] - (*b.pixel_spacing)[1]) > 1e-4)) {
    return DicomRefusal(Code::kInvalidArgument, ErrorReason::kShapeMismatch, slice.file,
                        "PixelSpacing", "differs from the series' first slice");
  }
  if (a.orientation && b.orientation) {
    for (int i = 0; i < 6; ++i) {
      if (std::fabs((*a.orientation)[i] - (*b.orientation)[i]) > 1e-4) {
        return DicomRefusal(Code::kInvalidArgument, ErrorReason::kShapeMismatch, slice.file,
                            "ImageOrientationPatient", "differs from the series' first slice");
      }
    }
  }
  return absl::OkStatus();
}

// A series of several slices is sorted along its normal, so every slice needs its geometry.
absl::Status CheckGeometryPresent(const std::vector<Slice>& slices) {
  for (const Slice& s : slices) {
    const char* missing = !s.header.pixel_spacing ? "PixelSpacing"
                          : !s.header.orientation ? "ImageOrientationPatient"
                          : !s.header.position    ? "ImagePositionPatient"
                                                  : nullptr;
    if (missing != nullptr) {
      return DicomRefusal(Code::kInvalidArgument, ErrorReason::kFieldRequired, s.file, missing,
                          absl::StrCat("missing for frame ", s.frame + 1,
                                       " (a series of several slices needs its geometry)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DicomSeries> ReadDicomSeries(const std::string& path,
                                            const DicomReadOptions& options) {
  QuietDcmtkLog();
  std::error_code ec;
  std::vector<std::string> candidates;
  if (fs::is_regular_file(path, ec)) {
    candidates.push_back(path);
  } else if (fs::is_directory(path, ec)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
      if (entry.is_regular_file()) candidates.push_back(entry.path().string());
    }
    std::sort(candidates.begin(), candidates.end());
  } else {
    return absl::NotFoundError(absl::StrCat(path, ": not a directory or file"));
  }

  // Pass 1: headers only (stop before the pixels), checks and the sort key.
  std::string first_uid;
  Uint16 first_rows = 0, first_columns = 0;
  std::vector<Slice> slices;
  std::map<std::string, PixelModule> modules;  // per file
  // Whether the series may be kept as its stored frames, and their syntax and photometric.
  bool keep_frames = !options.frame_syntaxes.empty();
  std::string frames_syntax, frames_photometric;
  std::set<std::string> other_series;
  for (const std::string& file : candidates) {
    DcmFileFormat format;
    DicomLoad load;
    // A deflated dataset may inflate to the volume's bytes and its headers, not more.
    const std::uintmax_t max_inflated =
        static_cast<std::uintmax_t>(options.max_voxels) * 2 + (std::uintmax_t{64} << 20);
    const absl::Status loaded = LoadDicomFile(file, true, max_inflated, &format, &load);
    if (!load.part10) continue;  // not a DICOM file (README, .json, ...)
    DcmDataset* ds = format.getDataset();
    if (!loaded.ok()) {
      if (loaded.code() != Code::kInvalidArgument) return loaded;  // cannot open, inflate
      // DCMTK stopped in the header. An image (Rows read before the damage) is refused; what
      // shows no Rows by then is skipped, as every file that is not an image is.
      if (!ds->tagExists(DCM_Rows)) continue;
      return DicomRefusal(Code::kDataLoss, ErrorReason::kCorruptEncodedData, file, "",
                          absl::StrCat("does not parse (", LoadFailureReason(loaded, file), ")"));
    }
    if (!ds->tagExists(DCM_Rows)) continue;  // DICOMDIR, reports, presentation states
    OFString uid;
    ds->findAndGetOFString(DCM_SeriesInstanceUID, uid);
    if (!options.series_uid.empty() && options.series_uid != uid.c_str()) {
      other_series.insert(uid.c_str());
      continue;
    }
    CUIMG_ASSIGN_OR_RETURN(const PixelModule module, ReadPixelModule(ds, file));
    Uint16 rows = 0, columns = 0;
    ds->findAndGetUint16(DCM_Rows, rows);
    ds->findAndGetUint16(DCM_Columns, columns);
    // Uncompressed pixels need Rows * Columns * frames * bytes: a header that claims more than
    // the file holds is refused here, before the volume is allocated from it. (A compressed
    // stream has no such bound; options.max_voxels bounds what it may allocate.)
    // DCMTK 3.6.7 reads a syntax it does not know (HTJ2K) as explicit VR: the meta header says
    // whether the pixel data is encapsulated.
    const DcmXfer xfer(ds->getOriginalXfer());
    if (!xfer.isEncapsulated() && xfer.getStreamCompression() == ESC_none &&
        !IsEncapsulatedFrameSyntax(MetaTransferSyntax(&format))) {
      const std::uintmax_t pixel_bytes =
          std::uintmax_t{rows} * columns * module.frames * (module.bits_allocated / 8);
      if (load.dataset_bytes < pixel_bytes) {
        return DicomRefusal(Code::kDataLoss, ErrorReason::kDataSizeMismatch, file, "PixelData",
                            absl::StrCat(columns, "x", rows, "x", module.frames, " pixels need ",
                                         pixel_bytes, " bytes, the file has ", load.dataset_bytes));
      }
    }
    if (module.frames > 1 && !ds->tagExists(DCM_PerFrameFunctionalGroupsSequence) &&
        !ds->tagExists(DCM_SharedFunctionalGroupsSequence)) {
      return DicomRefusal(Code::kUnimplemented, ErrorReason::kUnsupportedPixelType, file,
                          "PerFrameFunctionalGroupsSequence",
                          absl::StrCat(module.frames,
                                       " frames without functional groups (cuimg reads enhanced "
                                       "multi-frame objects)"));
    }
    if (uid.empty()) {
      return DicomRefusal(Code::kInvalidArgument, ErrorReason::kFieldRequired, file,
                          "SeriesInstanceUID", "missing");
    }
    if (rows == 0 || columns == 0) {
      return DicomRefusal(Code::kInvalidArgument, ErrorReason::kFieldRequired, file, "Rows",
                          "no Rows/Columns");
    }
    for (int frame = 0; frame < module.frames; ++frame) {
      Slice slice;
      slice.file = file;
      slice.frame = frame;
      CUIMG_ASSIGN_OR_RETURN(slice.header, ReadFrameHeader(ds, file, frame));
      if (slices.empty()) {
        first_uid = uid.c_str();
        first_rows = rows;
        first_columns = columns;
      } else {
        CUIMG_RETURN_IF_ERROR(CheckSameSeries(slices[0], first_uid, first_rows, first_columns,
                                              slice, uid.c_str(), rows, columns, path));
      }
      slices.push_back(std::move(slice));
      if (slices.size() > 65536) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": more than 65536 slices"));
      }
    }
    modules[file] = module;
    if (keep_frames) {
      OFString photometric;
      ds->findAndGetOFString(DCM_PhotometricInterpretation, photometric);
      const std::string syntax = MetaTransferSyntax(&format);
      const bool known = std::find(options.frame_syntaxes.begin(), options.frame_syntaxes.end(),
                                   syntax) != options.frame_syntaxes.end();
      const PixelModule& first = modules.begin()->second;
      keep_frames =
          known && IsEncapsulatedFrameSyntax(syntax) && module.frames == 1 &&
          (frames_syntax.empty() ||
           (syntax == frames_syntax && photometric.c_str() == frames_photometric &&
            module.bits_allocated == first.bits_allocated &&
            module.bits_stored == first.bits_stored && module.is_signed == first.is_signed));
      frames_syntax = syntax;
      frames_photometric = photometric.c_str();
    }
  }
  if (slices.empty()) {
    // A file named on its own is meant as an image: skipping it would make bad data look like a
    // wrong path (the Python reader's rule too).
    if (fs::is_regular_file(path, ec) && other_series.empty()) {
      return DicomRefusal(Code::kInvalidArgument, ErrorReason::kInvalidFormat, path, "",
                          "is not a DICOM image file (no Part 10 header with Rows)");
    }
    if (!other_series.empty()) {
      return absl::NotFoundError(absl::StrCat(path, ": no slice of series ", options.series_uid,
                                              " (it holds ", absl::StrJoin(other_series, ", "),
                                              ")"));
    }
    return absl::NotFoundError(absl::StrCat(path, ": no DICOM image files"));
  }
  if (std::int64_t{first_rows} * first_columns * static_cast<std::int64_t>(slices.size()) >
      options.max_voxels) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": more than ", options.max_voxels,
                                                   " voxels (the bound of every volume reader)"));
  }

  DicomSeries series;
  if (slices.size() > 1) {
    CUIMG_RETURN_IF_ERROR(CheckGeometryPresent(slices));
    const auto& iop = *slices[0].header.orientation;
    const Vec3 row_direction{iop[0], iop[1], iop[2]};
    const Vec3 column_direction{iop[3], iop[4], iop[5]};
    const Vec3 normal = Cross(row_direction, column_direction);
    for (Slice& s : slices) {
      const Vec3& p = *s.header.position;
      s.position = p[0] * normal[0] + p[1] * normal[1] + p[2] * normal[2];
    }
    std::sort(slices.begin(), slices.end(),
              [](const Slice& a, const Slice& b) { return a.position < b.position; });
    std::vector<double> gaps;
    for (std::size_t i = 1; i < slices.size(); ++i) {
      const double gap = slices[i].position - slices[i - 1].position;
      if (gap < 1e-4) {
        return DicomRefusal(Code::kInvalidArgument, ErrorReason::kValueOutOfRange, slices[i].file,
                            "ImagePositionPatient",
                            absl::StrCat("frame ", slices[i].frame + 1, " at the same position as ",
                                         slices[i - 1].file, " along the slice normal"));
      }
      gaps.push_back(gap);
    }
    std::vector<double> sorted = gaps;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double median = sorted[sorted.size() / 2];
    series.spacing.z_mm = median;
    for (double g : gaps) {
      series.gap_deviation_mm = std::max(series.gap_deviation_mm, std::fabs(g - median));
    }
    series.geometry.known = true;
    series.geometry.origin = *slices[0].header.position;
    series.geometry.axes = {row_direction, column_direction, normal};
  } else if (const FrameHeader& h = slices[0].header;
             h.orientation && h.position && h.pixel_spacing) {
    const auto& iop = *h.orientation;
    const Vec3 row_direction{iop[0], iop[1], iop[2]};
    const Vec3 column_direction{iop[3], iop[4], iop[5]};
    series.geometry.known = true;
    series.geometry.origin = *h.position;
    series.geometry.axes = {row_direction, column_direction,
                            Cross(row_direction, column_direction)};
  }
  if (const auto& ps = slices[0].header.pixel_spacing) {
    series.spacing.x_mm = (*ps)[1];
    series.spacing.y_mm = (*ps)[0];
  }

  // Pass 2: pixels, one decode per file, each frame to its volume slice.
  const bool floating = std::any_of(slices.begin(), slices.end(), [](const Slice& s) {
    return !IsInteger(s.header.slope) || !IsInteger(s.header.intercept);
  });
  const PixelType type = floating ? PixelType::kF32 : PixelType::kI16;
  for (const Slice& s : slices) {
    series.files.push_back(s.file);
    series.frames.push_back(s.frame);
    series.slopes.push_back(s.header.slope);
    series.intercepts.push_back(s.header.intercept);
  }
  series.type = type;
  series.extent = Extent{first_columns, first_rows, static_cast<std::int64_t>(slices.size())};
  if (keep_frames) {
    // Sent as they are: the server decodes and rescales them by the rule above.
    StoredFrames stored;
    stored.transfer_syntax_uid = frames_syntax;
    stored.module = modules.begin()->second;
    stored.monochrome1 = frames_photometric == "MONOCHROME1";
    for (const Slice& s : slices) {
      CUIMG_ASSIGN_OR_RETURN(std::string frame, ReadEncapsulatedFrame(s.file));
      stored.data.push_back(std::move(frame));
    }
    series.stored = std::move(stored);
    return series;
  }
  const std::size_t slice_pixels = std::size_t{first_rows} * first_columns;
  series.volume =
      Image(type, Extent{first_columns, first_rows, static_cast<std::int64_t>(slices.size())});
  std::map<std::string, std::vector<std::size_t>> by_file;
  for (std::size_t z = 0; z < slices.size(); ++z) by_file[slices[z].file].push_back(z);
  for (const auto& [file, indices] : by_file) {
    const PixelModule& module = modules[file];
    CUIMG_ASSIGN_OR_RETURN(const DicomPixels pixels,
                           DecodeDicomPixels(file, first_columns, first_rows, module.frames));
    for (std::size_t z : indices) {
      CUIMG_RETURN_IF_ERROR(
          RescaleFrame(pixels, module, slices[z], z, type,
                       series.volume.bytes() + z * slice_pixels * PixelSize(type)));
    }
    series.multi_frame = series.multi_frame || module.frames > 1;
  }
  return series;
}

}  // namespace cuimg
