// A compressed DICOM series to and from the server as frames (issue 49): what the server decodes
// and encodes (GetServerInfo, asked once per command), a series kept as its stored frames
// (client/io/dicom_frames.h) as ImageSource.dicom_frames, and the --output_syntax of a derived
// series.
#ifndef CUIMG_CLIENT_COMMANDS_STORED_FRAMES_H_
#define CUIMG_CLIENT_COMMANDS_STORED_FRAMES_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/connection.h"
#include "client/io/dicom_series.h"
#include "client/io/voxel_spacing.h"
#include "cuimg/common/image.h"
#include "cuimg/v1/server_info.pb.h"
#include "cuimg/v1/types.pb.h"

namespace cuimg {

// The server's ServerInfo. A server without GetServerInfo (UNIMPLEMENTED: older than issue 49)
// gives an empty one: it decodes and encodes no frames. Any other failure is the RPC's status
// (FromGrpcStatus).
absl::StatusOr<v1::ServerInfo> FetchServerInfo(const ConnectionOptions& connection);

// The transfer syntaxes a series may be sent in as stored frames to a server that reported
// `info`: those of its decodable_transfer_syntaxes that are lossless, whose frames decode to the
// same values whichever decoder runs (the client's GDCM or the server's; a lossy JPEG's values
// are its decoder's, and pydicom's JPEG-lossy.dcm is one the server's IJG refuses where GDCM
// reads it), and HTJ2K of any kind, which the client cannot decode at all.
std::vector<std::string> SendableSyntaxes(const v1::ServerInfo& info);

// `stored` (a series' frames) with each slice's rescale (`series` slopes and intercepts) and
// `spacing`, as an ImageSource's dicom_frames. The frames are copied.
void ToDicomFrames(const StoredFrames& stored, const DicomSeries& series,
                   const VoxelSpacing& spacing, v1::DicomFrames* out);

// Reports a failed call that carried `series` as stored frames: a frame the server could not
// decode (CORRUPT_ENCODED_DATA naming input.dicom_frames.frames[i]) is the file's fault, printed
// as a reader's refusal ("error: FILE: PixelData: the server's message") with kExitBadData, as
// when the client decodes it; any other status as ReportRpcError.
int ReportFramesRpcError(const grpc::Status& status, const DicomSeries& series);

// How a derived DICOM series stores its pixels: --output_syntax.
enum class OutputSyntax { kExplicit, kHtj2k, kJ2k };
// "explicit", "htj2k" or "j2k"; INVALID_ARGUMENT naming --output_syntax otherwise.
absl::StatusOr<OutputSyntax> ParseOutputSyntax(const std::string& text);
// The transfer syntax UID a derived series of `syntax` is written in on the client
// (1.2.840.10008.1.2.4.201 for kHtj2k, .90 for kJ2k; empty for kExplicit).
std::string OutputSyntaxUid(OutputSyntax syntax);
// Whether the server reporting `info` encodes results as `syntax` (its encodable syntaxes list
// kHtj2k's UID); kJ2k and kExplicit: never (the server encodes HTJ2K only).
bool ServerEncodes(const v1::ServerInfo& info, OutputSyntax syntax);

// Each slice of `result` (one-channel I16) encoded as a lossless frame of `syntax` (kHtj2k:
// OpenJPH, kJ2k: OpenJPEG, codec/frame_encode.h) on this machine, for a server that does not
// encode it. INVALID_ARGUMENT for another result or kExplicit; INTERNAL when an encoder fails.
absl::StatusOr<std::vector<std::string>> EncodeSlices(OutputSyntax syntax, const ImageView& result);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_COMMANDS_STORED_FRAMES_H_
