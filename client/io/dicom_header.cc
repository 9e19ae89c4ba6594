#include "client/io/dicom_header.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace cuimg {
namespace {

using Code = absl::StatusCode;

// An integer attribute: `fallback` when absent or empty, -1 when its value does not parse (out
// of every range it is checked against, so it is refused naming the attribute).
long IntegerValue(DcmItem* ds, const DcmTagKey& tag, long fallback) {
  DcmElement* element = nullptr;
  if (ds->findAndGetElement(tag, element).bad() || element == nullptr ||
      element->getLength() == 0) {
    return fallback;
  }
  Sint32 value = 0;
  if (ds->findAndGetSint32(tag, value).good()) return value;
  Uint16 unsigned_value = 0;
  if (ds->findAndGetUint16(tag, unsigned_value).good()) return unsigned_value;
  return -1;
}

// The element holding `tag` for frame `frame`: in the macro sequence `macro` of the frame's
// per-frame functional group item, else of the shared one, else at the top level; nullptr when
// absent or empty everywhere.
DcmElement* FrameElement(DcmItem* ds, long frame, const DcmTagKey& macro, const DcmTagKey& tag) {
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
    DcmElement* element = nullptr;
    if (group->findAndGetSequenceItem(macro, item, 0).good() && item != nullptr &&
        item->findAndGetElement(tag, element, /*searchIntoSub=*/false).good() &&
        element != nullptr && element->getLength() > 0) {
      return element;
    }
  }
  DcmElement* element = nullptr;
  if (ds->findAndGetElement(tag, element, /*searchIntoSub=*/false).good() && element != nullptr &&
      element->getLength() > 0) {
    return element;
  }
  return nullptr;
}

// The N decimal values of a frame's attribute, nullopt when it is absent or holds another number
// of values or one that does not parse.
template <std::size_t N>
std::optional<std::array<double, N>> FrameNumbers(DcmItem* ds, long frame, const DcmTagKey& macro,
                                                  const DcmTagKey& tag) {
  DcmElement* element = FrameElement(ds, frame, macro, tag);
  if (element == nullptr || element->getVM() != N) return std::nullopt;
  std::array<double, N> values{};
  for (unsigned long i = 0; i < N; ++i) {
    if (element->getFloat64(values[i], i).bad()) return std::nullopt;
  }
  return values;
}

}  // namespace

absl::Status DicomRefusal(absl::StatusCode code, ErrorReason reason, const std::string& file,
                          absl::string_view keyword, absl::string_view detail) {
  return MakeError(code, reason, "",
                   keyword.empty() ? absl::StrCat(file, ": ", detail)
                                   : absl::StrCat(file, ": ", keyword, ": ", detail));
}

absl::StatusOr<PixelModule> ReadPixelModule(DcmItem* ds, const std::string& file) {
  const long samples = IntegerValue(ds, DCM_SamplesPerPixel, 1);
  if (samples != 1) {
    return DicomRefusal(Code::kUnimplemented, ErrorReason::kUnsupportedPixelType, file,
                        "SamplesPerPixel",
                        absl::StrCat(samples, " samples per pixel (cuimg reads grayscale images)"));
  }
  OFString photometric;
  ds->findAndGetOFString(DCM_PhotometricInterpretation, photometric);
  if (photometric != "MONOCHROME1" && photometric != "MONOCHROME2") {
    return DicomRefusal(Code::kUnimplemented, ErrorReason::kUnsupportedPixelType, file,
                        "PhotometricInterpretation",
                        absl::StrCat("'", std::string(photometric.c_str()).substr(0, 16),
                                     "' (cuimg reads MONOCHROME1 and MONOCHROME2)"));
  }
  const long allocated = IntegerValue(ds, DCM_BitsAllocated, 0);
  if (allocated != 8 && allocated != 16) {
    return DicomRefusal(Code::kUnimplemented, ErrorReason::kUnsupportedPixelType, file,
                        "BitsAllocated", absl::StrCat(allocated, " (cuimg reads 8 or 16)"));
  }
  const long stored = IntegerValue(ds, DCM_BitsStored, allocated);
  if (stored < 1 || stored > allocated) {
    return DicomRefusal(Code::kInvalidArgument, ErrorReason::kValueOutOfRange, file, "BitsStored",
                        absl::StrCat(stored, " not in [1, BitsAllocated]"));
  }
  const long high_bit = IntegerValue(ds, DCM_HighBit, stored - 1);
  if (high_bit != stored - 1) {
    return DicomRefusal(
        Code::kUnimplemented, ErrorReason::kUnsupportedPixelType, file, "HighBit",
        absl::StrCat(high_bit, ", not BitsStored - 1 (cuimg reads values in the low bits)"));
  }
  const long representation = IntegerValue(ds, DCM_PixelRepresentation, -2);
  if (representation == -2) {
    return DicomRefusal(Code::kInvalidArgument, ErrorReason::kFieldRequired, file,
                        "PixelRepresentation", "missing");
  }
  if (representation != 0 && representation != 1) {
    return DicomRefusal(Code::kInvalidArgument, ErrorReason::kValueOutOfRange, file,
                        "PixelRepresentation", absl::StrCat(representation, ", not 0 or 1"));
  }
  const long frames = IntegerValue(ds, DCM_NumberOfFrames, 1);
  if (frames < 1 || frames > 65536) {
    return DicomRefusal(Code::kInvalidArgument, ErrorReason::kValueOutOfRange, file,
                        "NumberOfFrames", absl::StrCat(frames, " not in [1, 65536]"));
  }
  if (ds->tagExists(DCM_ModalityLUTSequence)) {
    return DicomRefusal(Code::kUnimplemented, ErrorReason::kUnsupportedPixelType, file,
                        "ModalityLUTSequence",
                        "a modality LUT (cuimg applies RescaleSlope and RescaleIntercept only)");
  }
  return PixelModule{static_cast<int>(allocated), static_cast<int>(stored), representation == 1,
                     static_cast<int>(frames)};
}

absl::StatusOr<FrameHeader> ReadFrameHeader(DcmItem* ds, const std::string& file, int frame) {
  FrameHeader h;
  h.pixel_spacing = FrameNumbers<2>(ds, frame, DCM_PixelMeasuresSequence, DCM_PixelSpacing);
  h.orientation =
      FrameNumbers<6>(ds, frame, DCM_PlaneOrientationSequence, DCM_ImageOrientationPatient);
  h.position = FrameNumbers<3>(ds, frame, DCM_PlanePositionSequence, DCM_ImagePositionPatient);
  if (auto slope =
          FrameNumbers<1>(ds, frame, DCM_PixelValueTransformationSequence, DCM_RescaleSlope)) {
    h.slope = (*slope)[0];
  }
  if (auto intercept =
          FrameNumbers<1>(ds, frame, DCM_PixelValueTransformationSequence, DCM_RescaleIntercept)) {
    h.intercept = (*intercept)[0];
  }
  if (!std::isfinite(h.slope) || !std::isfinite(h.intercept) || h.slope == 0) {
    return DicomRefusal(Code::kInvalidArgument, ErrorReason::kValueOutOfRange, file, "RescaleSlope",
                        "RescaleSlope is 0 or not finite, or RescaleIntercept not finite");
  }
  return h;
}

}  // namespace cuimg
