// A DICOM file's encapsulated (compressed) frames as they are stored, read and written through
// DCMTK's dcmdata without decoding them: what the CLI sends as ImageSource.dicom_frames when the
// server decodes the syntax (issue 49), and how a result encoded as JPEG 2000 or HTJ2K is written
// into a derived series. DCMTK 3.6.7 knows no HTJ2K syntax, so the transfer syntax is taken from,
// and written into, the meta header as a UID string.
#ifndef CUIMG_CLIENT_IO_DICOM_FRAMES_H_
#define CUIMG_CLIENT_IO_DICOM_FRAMES_H_

#include <dcmtk/config/osconfig.h>  // first, as DCMTK requires
#include <dcmtk/dcmdata/dctk.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/dicom_header.h"

namespace cuimg {

// A series kept as its stored frames: one encapsulated frame per volume slice, in z order, all of
// one transfer syntax and one pixel module.
struct StoredFrames {
  std::string transfer_syntax_uid;
  PixelModule module;
  bool monochrome1 = false;
  std::vector<std::string> data;
  // The bytes of every frame together.
  std::size_t bytes() const;
};

// The TransferSyntaxUID of `format`'s meta header, without padding; empty when there is none.
std::string MetaTransferSyntax(DcmFileFormat* format);

// Whether frames of `uid` are encapsulated (compressed) in a syntax cuimg's frame decoders know
// (codec/dicom_frame.h): RLE, JPEG, JPEG-LS, JPEG 2000, HTJ2K. Native syntaxes are not.
bool IsEncapsulatedFrameSyntax(const std::string& uid);

// The one frame of the single-frame, encapsulated DICOM file `file`: the fragments of its Pixel
// Data after the basic offset table, concatenated (PS3.5 A.4). DATA_LOSS naming the file and
// PixelData when the file does not load or its pixel data is not a sequence of fragments.
absl::StatusOr<std::string> ReadEncapsulatedFrame(const std::string& file);

// Replaces the Pixel Data of `ds` with `frame` encapsulated: an empty basic offset table and one
// fragment (a zero byte appended to an odd-length frame: items are even, PS3.5 A.4). INTERNAL
// naming `file` when DCMTK refuses.
absl::Status PutEncapsulatedFrame(DcmDataset* ds, const std::string& frame,
                                  const std::string& file);

// Writes `format` (its pixel data from PutEncapsulatedFrame) to `path` under transfer syntax
// `uid`, an encapsulated syntax (IsEncapsulatedFrameSyntax): the dataset as DCMTK writes JPEG 2000
// (explicit VR little endian, encapsulated pixel data; every encapsulated syntax is written so),
// and a new meta header naming `uid`. INTERNAL for another syntax or a dataset DCMTK cannot write
// so (checked before a byte is written); DATA_LOSS naming `path` when the write fails.
absl::Status SaveEncapsulated(DcmFileFormat* format, const std::string& uid,
                              const std::string& path);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_DICOM_FRAMES_H_
