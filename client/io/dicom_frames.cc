#include "client/io/dicom_frames.h"

#include <dcmtk/dcmdata/dcpixseq.h>
#include <dcmtk/dcmdata/dcpxitem.h>

#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/io/dicom_load.h"
#include "cuimg/codec/dicom_frame.h"

namespace cuimg {

std::size_t StoredFrames::bytes() const {
  std::size_t total = 0;
  for (const std::string& frame : data) total += frame.size();
  return total;
}

std::string MetaTransferSyntax(DcmFileFormat* format) {
  OFString uid;
  if (format->getMetaInfo()->findAndGetOFString(DCM_TransferSyntaxUID, uid).bad()) return "";
  absl::string_view text(uid.c_str());
  while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) text.remove_suffix(1);
  return std::string(text);
}

bool IsEncapsulatedFrameSyntax(const std::string& uid) {
  const absl::StatusOr<FrameSyntax> syntax = FrameSyntaxFromUid(uid, "");
  return syntax.ok() && *syntax != FrameSyntax::kNative;
}

absl::StatusOr<std::string> ReadEncapsulatedFrame(const std::string& file) {
  QuietDcmtkLog();
  DcmFileFormat format;
  DicomLoad load;
  // Encapsulated data is read as it is (no inflating); its fragments hold what they hold.
  if (absl::Status s = LoadDicomFile(file, false, 0, &format, &load); !s.ok()) {
    return DicomRefusal(absl::StatusCode::kDataLoss, ErrorReason::kCorruptEncodedData, file, "",
                        absl::StrCat("does not load (", LoadFailureReason(s, file), ")"));
  }
  DcmElement* element = nullptr;
  DcmPixelSequence* fragments = nullptr;
  E_TransferSyntax read_as = EXS_Unknown;
  const DcmRepresentationParameter* parameter = nullptr;
  if (format.getDataset()->findAndGetElement(DCM_PixelData, element).good() && element != nullptr) {
    auto* pixels = static_cast<DcmPixelData*>(element);
    // The representation DCMTK read: for a syntax it does not know (HTJ2K) it is keyed by the
    // syntax it read the dataset as, but still holds the fragments.
    pixels->getOriginalRepresentationKey(read_as, parameter);
    if (pixels->getEncapsulatedRepresentation(read_as, parameter, fragments).bad()) {
      fragments = nullptr;
    }
  }
  if (fragments == nullptr || fragments->card() < 2) {
    return DicomRefusal(absl::StatusCode::kDataLoss, ErrorReason::kCorruptEncodedData, file,
                        "PixelData",
                        "not encapsulated frames (no fragments after the offset table)");
  }
  std::string frame;
  for (unsigned long i = 1; i < fragments->card(); ++i) {  // item 0: the basic offset table
    DcmPixelItem* item = nullptr;
    Uint8* bytes = nullptr;
    if (fragments->getItem(item, i).bad() || item == nullptr ||
        (item->getLength() > 0 && (item->getUint8Array(bytes).bad() || bytes == nullptr))) {
      return DicomRefusal(absl::StatusCode::kDataLoss, ErrorReason::kCorruptEncodedData, file,
                          "PixelData", absl::StrCat("fragment ", i, " does not read"));
    }
    frame.append(reinterpret_cast<const char*>(bytes), item->getLength());
  }
  return frame;
}

absl::Status PutEncapsulatedFrame(DcmDataset* ds, const std::string& frame,
                                  const std::string& file) {
  std::string padded = frame;
  if (padded.size() % 2 != 0) padded.push_back('\0');
  auto fragments = std::make_unique<DcmPixelSequence>(DCM_PixelSequenceTag);
  auto offsets = std::make_unique<DcmPixelItem>(DCM_PixelItemTag);
  auto item = std::make_unique<DcmPixelItem>(DCM_PixelItemTag);
  if (item->putUint8Array(reinterpret_cast<const Uint8*>(padded.data()),
                          static_cast<unsigned long>(padded.size()))
          .bad() ||
      fragments->insert(offsets.release()).bad() || fragments->insert(item.release()).bad()) {
    return absl::InternalError(absl::StrCat(file, ": cannot encapsulate the frame"));
  }
  auto pixels = std::make_unique<DcmPixelData>(DCM_PixelData);
  // Every encapsulated syntax is stored as JPEG 2000's is; the meta header names the real one.
  pixels->putOriginalRepresentation(EXS_JPEG2000LosslessOnly, nullptr, fragments.release());
  if (ds->insert(pixels.release(), true).bad()) {
    return absl::InternalError(absl::StrCat(file, ": cannot set PixelData"));
  }
  return absl::OkStatus();
}

absl::Status SaveEncapsulated(DcmFileFormat* format, const std::string& uid,
                              const std::string& path) {
  QuietDcmtkLog();  // "Meta Information Header is not updated", as asked
  if (!IsEncapsulatedFrameSyntax(uid)) {
    return absl::InternalError(absl::StrCat("not an encapsulated transfer syntax: ", uid));
  }
  constexpr E_TransferSyntax kCarrier = EXS_JPEG2000LosslessOnly;
  DcmDataset* ds = format->getDataset();
  if (!ds->canWriteXfer(kCarrier, kCarrier)) {
    return absl::InternalError(
        absl::StrCat(path, ": the dataset cannot be written encapsulated (nothing written)"));
  }
  // A new meta header (MediaStorageSOPInstanceUID follows the new SOPInstanceUID), then the
  // syntax's UID in place of the carrier's and the group length recomputed for it.
  DcmMetaInfo* meta = format->getMetaInfo();
  if (format->validateMetaInfo(kCarrier, EWM_createNewMeta).bad() ||
      meta->putAndInsertString(DCM_TransferSyntaxUID, uid.c_str()).bad() ||
      meta->computeGroupLengthAndPadding(EGL_withGL, EPD_noChange, EXS_LittleEndianExplicit,
                                         EET_UndefinedLength)
          .bad()) {
    return absl::InternalError(absl::StrCat(path, ": cannot make the meta header"));
  }
  if (OFCondition c = format->saveFile(path.c_str(), kCarrier, EET_UndefinedLength, EGL_recalcGL,
                                       EPD_noChange, 0, 0, EWM_dontUpdateMeta);
      c.bad()) {
    return absl::DataLossError(absl::StrCat(path, ": ", c.text()));
  }
  return absl::OkStatus();
}

}  // namespace cuimg
