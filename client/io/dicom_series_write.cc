// The writing half of dicom_series.h (WriteDicomSeries): a processed volume as a new series that
// carries the source slices' tags. Reading is in dicom_series.cc.
#include <dcmtk/config/osconfig.h>  // first, as DCMTK requires
#include <dcmtk/dcmdata/dctk.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/io/atomic_output.h"
#include "client/io/dicom_frames.h"
#include "client/io/dicom_load.h"
#include "client/io/dicom_series.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {

namespace fs = std::filesystem;

namespace {

std::string NewUid(const std::string& root, const char* site_root) {
  char uid[100];
  dcmGenerateUniqueIdentifier(uid, root.empty() ? site_root : root.c_str());
  return uid;
}

absl::Status Put(DcmItem* ds, const DcmTagKey& tag, const std::string& value,
                 const std::string& file) {
  if (ds->putAndInsertOFStringArray(tag, value.c_str()).bad()) {
    return absl::InternalError(absl::StrCat(file, ": cannot set ", DcmTag(tag).getTagName()));
  }
  return absl::OkStatus();
}

// DS holds 16 characters: the slope as written, so quantising uses the value a reader will see.
std::string DecimalString(double v) {
  for (int digits = 10; digits > 1; --digits) {
    const std::string s = absl::StrFormat("%.*g", digits, v);
    if (s.size() <= 16) return s;
  }
  return absl::StrFormat("%.1g", v);
}

// One F32 result slice as signed 16-bit stored values and the rescale that gives them back:
// the source's own (slope, intercept) when every value fits at that step, else (max|v| / 32767, 0).
// Empty slope/intercept strings mean "keep the source's elements as they are".
struct Quantised {
  std::vector<std::int16_t> stored;
  std::string slope, intercept;
};

absl::StatusOr<Quantised> Quantise(const float* v, std::size_t count, double slope,
                                   double intercept, const std::string& file) {
  Quantised q;
  q.stored.resize(count);
  double largest = 0;
  bool fits = true;
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(v[i])) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": result holds NaN or infinity"));
    }
    largest = std::max(largest, std::fabs(static_cast<double>(v[i])));
    const double s = std::nearbyint((v[i] - intercept) / slope);
    if (s < -32768 || s > 32767) fits = false;
    if (fits) q.stored[i] = static_cast<std::int16_t>(s);
  }
  if (fits) return q;
  q.slope = DecimalString(largest > 0 ? largest / 32767 : 1);
  q.intercept = "0";
  const double step = std::strtod(q.slope.c_str(), nullptr);
  for (std::size_t i = 0; i < count; ++i) {
    const double s = std::clamp(std::nearbyint(v[i] / step), -32768.0, 32767.0);
    q.stored[i] = static_cast<std::int16_t>(s);
  }
  return q;
}

// Replaces the copied SourceImageSequence with one item naming the slice this one derives from.
absl::Status ReferenceSource(DcmDataset* ds, const std::string& sop_class,
                             const std::string& sop_instance, int frame, bool multi_frame,
                             const std::string& file) {
  ds->findAndDeleteElement(DCM_SourceImageSequence);
  DcmItem* item = nullptr;
  if (ds->findOrCreateSequenceItem(DCM_SourceImageSequence, item, 0).bad() || item == nullptr) {
    return absl::InternalError(absl::StrCat(file, ": cannot add SourceImageSequence"));
  }
  CUIMG_RETURN_IF_ERROR(Put(item, DCM_ReferencedSOPClassUID, sop_class, file));
  CUIMG_RETURN_IF_ERROR(Put(item, DCM_ReferencedSOPInstanceUID, sop_instance, file));
  if (multi_frame) {
    CUIMG_RETURN_IF_ERROR(Put(item, DCM_ReferencedFrameNumber, std::to_string(frame + 1), file));
  }
  return absl::OkStatus();
}

// Whether any item of `sequence`, at any depth, holds Pixel Data.
bool HoldsPixelData(DcmSequenceOfItems* sequence) {
  for (unsigned long i = 0; i < sequence->card(); ++i) {
    DcmItem* item = sequence->getItem(i);
    for (unsigned long j = 0; item != nullptr && j < item->card(); ++j) {
      DcmElement* element = item->getElement(j);
      if (element->getTag() == DCM_PixelData) return true;
      if (element->ident() == EVR_SQ && HoldsPixelData(static_cast<DcmSequenceOfItems*>(element))) {
        return true;
      }
    }
  }
  return false;
}

// Drops the top-level sequences that hold pixel data (the IconImageSequence, private
// thumbnails): their pixels depict the source, not the result, and an encapsulated one cannot be
// written uncompressed (DCMTK stops mid-file: issue 46's unreadable slice).
void DropSequencesHoldingPixels(DcmDataset* ds) {
  for (unsigned long i = ds->card(); i-- > 0;) {
    DcmElement* element = ds->getElement(i);
    if (element->ident() == EVR_SQ && HoldsPixelData(static_cast<DcmSequenceOfItems*>(element))) {
      delete ds->remove(i);
    }
  }
}

}  // namespace

absl::StatusOr<std::string> WriteDicomSeries(const DicomSeries& source, const ImageView& result,
                                             const std::string& directory,
                                             const DicomWriteOptions& options) {
  QuietDcmtkLog();
  const std::size_t depth = static_cast<std::size_t>(source.extent.depth);
  if ((result.type != PixelType::kI16 && result.type != PixelType::kF32) || result.channels != 1 ||
      result.extent != source.extent || source.files.size() != depth ||
      source.slopes.size() != depth || source.intercepts.size() != depth ||
      source.frames.size() != depth) {
    return absl::InvalidArgumentError(
        "DICOM output needs a one-channel i16 or f32 result of the source series' extent");
  }
  const bool encoded = !options.frames_syntax.empty();
  if (encoded && (result.type != PixelType::kI16 || options.frames.size() != depth)) {
    return absl::InvalidArgumentError(
        "an encoded DICOM output needs one frame per slice of an i16 result");
  }
  if (source.multi_frame) {
    return absl::FailedPreconditionError(
        absl::StrCat(directory,
                     ": the source is a multi-frame object; cuimg writes derived series of "
                     "single-frame sources only (write .nii, .nrrd or .npy instead)"));
  }
  if (options.uid_root.size() > 40 ||
      options.uid_root.find_first_not_of("0123456789.") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--uid_root: '", options.uid_root, "' is not at most 40 digits and dots"));
  }
  // The slices go into a sibling folder that moves into place once all are written
  // (atomic_output.h): a failure after the first slice leaves nothing, so a rerun is not refused.
  StagedOutputs staged;
  CUIMG_ASSIGN_OR_RETURN(const std::string folder, staged.Stage(directory, OutputKind::kFolder));

  const std::string series_uid = NewUid(options.uid_root, SITE_SERIES_UID_ROOT);
  const std::size_t slice_pixels = static_cast<std::size_t>(result.extent.SlicePixels());
  const std::string& derivation = options.derivation;
  for (std::size_t z = 0; z < depth; ++z) {
    const std::string& file = source.files[z];
    DcmFileFormat format;
    DicomLoad load;
    if (absl::Status s = LoadDicomFile(file, false, UINTMAX_MAX, &format, &load); !s.ok()) {
      return absl::DataLossError(s.message());
    }
    DcmDataset* ds = format.getDataset();
    const std::string sop_uid = NewUid(options.uid_root, SITE_INSTANCE_UID_ROOT);
    OFString description, image_type, source_class, source_instance;
    ds->findAndGetOFString(DCM_SOPClassUID, source_class);
    ds->findAndGetOFString(DCM_SOPInstanceUID, source_instance);
    ds->findAndGetOFString(DCM_SeriesDescription, description);
    const std::string new_description =
        (description.empty() ? derivation : absl::StrCat(description.c_str(), " ", derivation))
            .substr(0, 64);  // LO holds 64 characters
    ds->findAndGetOFStringArray(DCM_ImageType, image_type);
    std::string new_image_type = "DERIVED\\SECONDARY";
    // Keep the values after the first two (e.g. AXIAL).
    if (std::size_t at = std::string(image_type.c_str()).find('\\'); at != std::string::npos) {
      const std::string rest = std::string(image_type.c_str()).substr(at + 1);
      if (std::size_t at2 = rest.find('\\'); at2 != std::string::npos) {
        new_image_type += rest.substr(at2);
      }
    }
    // Pixels: I16 as they are (slope 1, intercept 0); F32 quantised per Quantise.
    std::vector<std::int16_t> stored(encoded ? 0 : slice_pixels);
    std::string slope = "1", intercept = "0";
    if (encoded) {
      // The frame holds the slice's values (slope 1, intercept 0 below).
    } else if (result.type == PixelType::kI16) {
      std::memcpy(stored.data(), static_cast<const std::int16_t*>(result.data) + z * slice_pixels,
                  slice_pixels * 2);
    } else {
      CUIMG_ASSIGN_OR_RETURN(Quantised q,
                             Quantise(static_cast<const float*>(result.data) + z * slice_pixels,
                                      slice_pixels, source.slopes[z], source.intercepts[z], file));
      stored = std::move(q.stored);
      slope = q.slope.empty() ? DecimalString(source.slopes[z]) : q.slope;
      intercept = q.intercept.empty() ? DecimalString(source.intercepts[z]) : q.intercept;
      if (q.slope.empty()) {  // the source's own strings, unchanged
        OFString text;
        if (ds->findAndGetOFString(DCM_RescaleSlope, text).good()) slope = text.c_str();
        if (ds->findAndGetOFString(DCM_RescaleIntercept, text).good()) intercept = text.c_str();
      }
    }
    Sint32 number = 0;
    for (const auto& [tag, value] : std::initializer_list<std::pair<DcmTagKey, std::string>>{
             {DCM_SeriesInstanceUID, series_uid},
             {DCM_SOPInstanceUID, sop_uid},
             {DCM_ImageType, new_image_type},
             {DCM_SeriesDescription, new_description},
             {DCM_DerivationDescription, derivation.substr(0, 1024)},
             {DCM_RescaleSlope, slope},
             {DCM_RescaleIntercept, intercept}}) {
      if (absl::Status s = Put(ds, tag, value, file); !s.ok()) return s;
    }
    if (ds->findAndGetSint32(DCM_SeriesNumber, number).good()) {
      if (absl::Status s = Put(ds, DCM_SeriesNumber, std::to_string(number + 1000), file);
          !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = ReferenceSource(ds, source_class.c_str(), source_instance.c_str(),
                                         source.frames[z], source.multi_frame, file);
        !s.ok()) {
      return s;
    }
    // Pixel module: signed 16-bit stored values. Attributes that describe the source's stored
    // values (and whose VR follows its PixelRepresentation) go; so does the source's icon.
    for (const DcmTagKey& tag :
         {DCM_SmallestImagePixelValue, DCM_LargestImagePixelValue, DCM_SmallestPixelValueInSeries,
          DCM_LargestPixelValueInSeries, DCM_PixelPaddingValue, DCM_PixelPaddingRangeLimit}) {
      ds->findAndDeleteElement(tag);
    }
    DropSequencesHoldingPixels(ds);
    if (ds->putAndInsertUint16(DCM_BitsAllocated, 16).bad() ||
        ds->putAndInsertUint16(DCM_BitsStored, 16).bad() ||
        ds->putAndInsertUint16(DCM_HighBit, 15).bad() ||
        ds->putAndInsertUint16(DCM_PixelRepresentation, 1).bad() ||
        (!encoded &&
         ds->putAndInsertUint16Array(DCM_PixelData, reinterpret_cast<const Uint16*>(stored.data()),
                                     static_cast<unsigned long>(slice_pixels))
             .bad())) {
      return absl::InternalError(absl::StrCat(file, ": cannot set the pixel module"));
    }
    const std::string name = absl::StrFormat("slice_%04d.dcm", z);
    const std::string out = (fs::path(folder) / name).string();
    if (encoded) {
      CUIMG_RETURN_IF_ERROR(PutEncapsulatedFrame(ds, options.frames[z], file));
      CUIMG_RETURN_IF_ERROR(SaveEncapsulated(&format, options.frames_syntax, out));
      continue;
    }
    // Checked before a byte is written: DCMTK would otherwise stop mid-file on an element it
    // cannot convert, leaving a slice no reader takes.
    if (!ds->canWriteXfer(EXS_LittleEndianExplicit, ds->getOriginalXfer())) {
      return absl::InternalError(absl::StrCat(
          file, ": an element cannot be written as explicit VR little endian (nothing written)"));
    }
    // A new meta header: MediaStorageSOPInstanceUID follows the new SOPInstanceUID; a compressed
    // source's pixels are now native, so the file is written uncompressed.
    if (OFCondition c = format.saveFile(out.c_str(), EXS_LittleEndianExplicit); c.bad()) {
      return absl::DataLossError(
          absl::StrCat((fs::path(directory) / name).string(), ": ", c.text()));
    }
  }
  CUIMG_RETURN_IF_ERROR(staged.Commit());
  return series_uid;
}

}  // namespace cuimg
