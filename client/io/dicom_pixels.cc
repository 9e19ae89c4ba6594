#include "client/io/dicom_pixels.h"

#include <fcntl.h>
#include <gdcmImageReader.h>
#include <gdcmTrace.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "client/io/dicom_header.h"
#include "client/io/dicom_load.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using Code = absl::StatusCode;

absl::Status Short(const std::string& file, std::size_t count) {
  return DicomRefusal(Code::kDataLoss, ErrorReason::kDataSizeMismatch, file, "PixelData",
                      absl::StrCat("missing or shorter than its ", count, " values"));
}

// Removes the file when it goes out of scope.
class TempFile {
 public:
  TempFile() {
    static std::atomic<int> counter{0};
    path_ = (fs::temp_directory_path() /
             absl::StrCat("cuimg-pixels-", getpid(), "-", counter++, ".dcm"))
                .string();
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Loads `file` with DCMTK. Native pixel data needs no codec: its `count` stored values are read
// here into `native` (true returned). Encapsulated data goes to GDCM (false returned), whose file
// parser asserts (aborts) or allocates an element's whole length on some malformed files that
// DCMTK reads or refuses cleanly (found by dicom_series_fuzzer): so GDCM gets a well-formed copy,
// written to `copy`, holding only what decoding needs, the pixel module and the pixel data.
absl::StatusOr<bool> ReadNativeOrCopy(const std::string& file, const std::string& copy,
                                      std::size_t count, std::vector<std::uint16_t>* native) {
  DcmFileFormat format;
  DicomLoad load;
  if (absl::Status s = LoadDicomFile(file, false, UINTMAX_MAX, &format, &load); !s.ok()) {
    return DicomRefusal(
        Code::kDataLoss, ErrorReason::kCorruptEncodedData, file, "PixelData",
        absl::StrCat("the file does not parse up to its end (", LoadFailureReason(s, file), ")"));
  }
  DcmDataset* ds = format.getDataset();
  if (!ds->tagExists(DCM_PixelData)) return Short(file, count);
  const DcmXfer original(ds->getOriginalXfer());
  if (!original.isEncapsulated()) {
    Uint16 bits_allocated = 0;
    ds->findAndGetUint16(DCM_BitsAllocated, bits_allocated);
    unsigned long n = 0;
    if (bits_allocated == 8) {
      const Uint8* p = nullptr;
      if (ds->findAndGetUint8Array(DCM_PixelData, p, &n).bad() || p == nullptr || n < count) {
        return Short(file, count);
      }
      native->assign(p, p + count);
    } else {
      const Uint16* p = nullptr;
      if (ds->findAndGetUint16Array(DCM_PixelData, p, &n).bad() || p == nullptr || n < count) {
        return Short(file, count);
      }
      native->assign(p, p + count);  // DCMTK swapped big endian data to host order
    }
    return true;
  }
  const DcmTagKey keep[] = {DCM_SOPClassUID,
                            DCM_SamplesPerPixel,
                            DCM_PhotometricInterpretation,
                            DCM_NumberOfFrames,
                            DCM_Rows,
                            DCM_Columns,
                            DCM_BitsAllocated,
                            DCM_BitsStored,
                            DCM_HighBit,
                            DCM_PixelRepresentation,
                            DCM_PlanarConfiguration,
                            DCM_PixelData};
  for (unsigned long i = ds->card(); i-- > 0;) {
    const DcmTagKey tag = ds->getElement(i)->getTag().getXTag();
    if (std::find(std::begin(keep), std::end(keep), tag) == std::end(keep)) {
      delete ds->remove(i);
    }
  }
  if (OFCondition c = format.saveFile(copy.c_str(), original.getXfer(), EET_ExplicitLength,
                                      EGL_recalcGL, EPD_noChange, 0, 0, EWM_createNewMeta);
      c.bad()) {
    return DicomRefusal(Code::kDataLoss, ErrorReason::kCorruptEncodedData, file, "PixelData",
                        absl::StrCat("does not copy (", c.text(), ")"));
  }
  return false;
}

// GDCM's decode of `copy` into `out` (count values, widened to 16 bits).
absl::Status DecodeWithGdcm(const std::string& file, const std::string& copy, int columns, int rows,
                            int frames, std::uint16_t* out) {
  gdcm::Trace::SetDebug(false);
  gdcm::Trace::SetWarning(false);
  gdcm::Trace::SetError(false);
  gdcm::ImageReader reader;
  reader.SetFileName(copy.c_str());
  if (!reader.Read()) {
    return DicomRefusal(Code::kDataLoss, ErrorReason::kCorruptEncodedData, file, "PixelData",
                        "GDCM cannot read its pixel data");
  }
  const gdcm::Image& image = reader.GetImage();
  const gdcm::PixelFormat& format = image.GetPixelFormat();
  const std::string syntax = image.GetTransferSyntax().GetString() != nullptr
                                 ? image.GetTransferSyntax().GetString()
                                 : "unknown transfer syntax";
  const int bytes = format.GetBitsAllocated() / 8;
  if (format.GetSamplesPerPixel() != 1 || (bytes != 1 && bytes != 2) ||
      format.GetBitsAllocated() % 8 != 0) {
    return DicomRefusal(Code::kUnimplemented, ErrorReason::kUnsupportedPixelType, file,
                        "BitsAllocated",
                        absl::StrCat("GDCM decodes ", format.GetSamplesPerPixel(), " samples of ",
                                     format.GetBitsAllocated(),
                                     " bits (cuimg reads grayscale 8- or 16-bit pixels)"));
  }
  const unsigned got_frames = image.GetNumberOfDimensions() > 2 ? image.GetDimension(2) : 1;
  if (static_cast<int>(image.GetDimension(0)) != columns ||
      static_cast<int>(image.GetDimension(1)) != rows || static_cast<int>(got_frames) != frames) {
    return DicomRefusal(
        Code::kInvalidArgument, ErrorReason::kShapeMismatch, file, "PixelData",
        absl::StrCat("GDCM sees ", image.GetDimension(0), "x", image.GetDimension(1), "x",
                     got_frames, " pixels, the header ", columns, "x", rows, "x", frames));
  }
  const std::size_t count = std::size_t(columns) * rows * frames;
  if (image.GetBufferLength() != count * bytes) {
    return DicomRefusal(Code::kDataLoss, ErrorReason::kCorruptEncodedData, file, "PixelData",
                        absl::StrCat("pixel buffer of ", image.GetBufferLength(), " bytes for ",
                                     count, " values (", syntax, ")"));
  }
  std::vector<char> buffer(count * bytes);
  if (!image.GetBuffer(buffer.data())) {
    return DicomRefusal(Code::kDataLoss, ErrorReason::kCorruptEncodedData, file, "PixelData",
                        absl::StrCat("pixel data does not decode (", syntax, ")"));
  }
  if (bytes == 2) {
    std::memcpy(out, buffer.data(), count * 2);  // GDCM decodes to host order
  } else {
    for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::uint8_t>(buffer[i]);
  }
  return absl::OkStatus();
}

// What the decoding child reports beside the values.
struct ChildReport {
  int code;    // absl::StatusCode; 0 with the values written
  int reason;  // ErrorReason, the status's payload (which does not cross the fork)
  char message[1024];
};

ErrorReason ReasonNamed(const std::string& name) {
#define CUIMG_REASON_NAMED_(n, text) \
  if (name == text) return ErrorReason::k##n;
  CUIMG_ERROR_REASONS(CUIMG_REASON_NAMED_)
#undef CUIMG_REASON_NAMED_
  return ErrorReason::kCorruptEncodedData;
}

}  // namespace

absl::StatusOr<DicomPixels> DecodeDicomPixels(const std::string& file, int columns, int rows,
                                              int frames) {
  const std::size_t count = std::size_t(columns) * rows * frames;
  DicomPixels out;
  out.columns = columns;
  out.rows = rows;
  out.frames = frames;
  TempFile copy;
  absl::StatusOr<bool> native = ReadNativeOrCopy(file, copy.path(), count, &out.stored);
  if (!native.ok()) return native.status();
  if (*native) return out;
  // GDCM's codecs abort (assert) on some malformed streams (found by dicom_series_fuzzer), so
  // they run in a child process that writes the values into memory shared with this one: a
  // child that dies is a stream that does not decode, not a dead client.
  const std::size_t bytes = sizeof(ChildReport) + count * sizeof(std::uint16_t);
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(file, ": no memory for ", count, " values"));
  }
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { munmap(p, n); }
  } unmap{shared, bytes};
  auto* report = static_cast<ChildReport*>(shared);
  auto* values = reinterpret_cast<std::uint16_t*>(static_cast<char*>(shared) + sizeof(ChildReport));
  report->code = -1;
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t child = fork();
  if (child < 0) return absl::InternalError(absl::StrCat(file, ": fork: ", std::strerror(errno)));
  if (child == 0) {
    // Die of the signal quietly: the parent's handlers (a crash reporter, libFuzzer's) are not
    // for a decoder it expects may abort.
    for (const int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    // OpenJPEG and GDCM's libjpeg print to stderr themselves ("Unsupported JPEG data precision
    // 12" for streams they then decode): the report below says what happened.
    if (const int devnull = open("/dev/null", O_WRONLY); devnull >= 0) dup2(devnull, STDERR_FILENO);
    const absl::Status s = DecodeWithGdcm(file, copy.path(), columns, rows, frames, values);
    report->code = static_cast<int>(s.code());
    report->reason = static_cast<int>(ReasonNamed(ErrorReasonOf(s)));
    std::snprintf(report->message, sizeof report->message, "%s", std::string(s.message()).c_str());
    _exit(0);  // no atexit handlers, no temporary file removal: the parent owns those
  }
  int wait_status = 0;
  while (waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0 || report->code < 0) {
    return DicomRefusal(
        Code::kDataLoss, ErrorReason::kCorruptEncodedData, file, "PixelData",
        absl::StrCat(
            "it stopped GDCM's decoder",
            WIFSIGNALED(wait_status) ? absl::StrCat(" (signal ", WTERMSIG(wait_status), ")") : ""));
  }
  if (report->code != 0) {
    return MakeError(static_cast<absl::StatusCode>(report->code),
                     static_cast<ErrorReason>(report->reason), "", report->message);
  }
  out.stored.assign(values, values + count);
  return out;
}

}  // namespace cuimg
