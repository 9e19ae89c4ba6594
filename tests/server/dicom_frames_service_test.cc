// DICOM frames over a real gRPC channel, in process, on the CPU backend: an HTJ2K volume with a
// CT rescale decodes (in the frame decoder helper) to the image its raw pixels give; RLE and
// native frames, stored values, fractional rescales (f32); results returned as HTJ2K frames
// decode to the raw result; refusals name the frame, the field and the reason; GetServerInfo.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuimg/codec/dicom_frame.h"
#include "cuimg/codec/frame_encode.h"
#include "proto/wire_contract.h"
#include "server/validation/proto_conversion.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

constexpr char kHtj2k[] = "1.2.840.10008.1.2.4.201";
constexpr char kRle[] = "1.2.840.10008.1.2.5";
constexpr char kNative[] = "1.2.840.10008.1.2.1";

// `slices` u16 slices of 12-bit CT values, each encoded as an HTJ2K lossless frame with the CT
// rescale (slope 1, intercept -1024).
v1::MorphologyRequest CtFramesRequest(const std::vector<Image>& slices) {
  v1::MorphologyRequest r;
  v1::DicomFrames* frames = r.mutable_input()->mutable_dicom_frames();
  frames->set_transfer_syntax_uid(kHtj2k);
  v1::DicomPixelModule* m = frames->mutable_pixel_module();
  m->set_rows(static_cast<std::uint32_t>(slices[0].extent().height));
  m->set_columns(static_cast<std::uint32_t>(slices[0].extent().width));
  m->set_bits_allocated(16);
  m->set_bits_stored(12);
  m->set_photometric_interpretation(v1::PHOTOMETRIC_INTERPRETATION_MONOCHROME2);
  for (const Image& slice : slices) {
    const std::vector<std::uint8_t> data =
        *EncodeLosslessFrame(FrameSyntax::kHtj2kLossless, slice.view());
    v1::DicomFrame* f = frames->add_frames();
    f->set_data(reinterpret_cast<const char*>(data.data()), data.size());
    f->set_rescale_slope(1);
    f->set_rescale_intercept(-1024);
  }
  frames->mutable_spacing()->set_x_mm(0.7);
  frames->mutable_spacing()->set_y_mm(0.7);
  frames->mutable_spacing()->set_z_mm(2.5);
  v1::MorphologyStep* step = r.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_ELLIPSE);
  step->mutable_element()->set_width(5);
  step->mutable_element()->set_height(3);
  return r;
}

std::vector<Image> CtSlices(int count) {
  std::vector<Image> slices;
  for (int z = 0; z < count; ++z) {
    Image s = testing::RandomImage(PixelType::kU16, Extent{45, 31, 1}, 70 + z);
    for (std::int64_t i = 0; i < s.extent().Pixels(); ++i) s.As<std::uint16_t>()[i] &= 0xFFF;
    slices.push_back(std::move(s));
  }
  return slices;
}

// The i16 volume the frames stand for: stored - 1024.
Image RescaledVolume(const std::vector<Image>& slices) {
  const Extent e = slices[0].extent();
  Image volume(PixelType::kI16, Extent{e.width, e.height, static_cast<std::int64_t>(slices.size())},
               1);
  for (std::size_t z = 0; z < slices.size(); ++z) {
    for (std::int64_t i = 0; i < e.Pixels(); ++i) {
      volume.As<std::int16_t>()[z * e.Pixels() + i] =
          static_cast<std::int16_t>(slices[z].As<std::uint16_t>()[i] - 1024);
    }
  }
  return volume;
}

// The result of the same steps on `volume` sent as raw pixels.
std::string RawResult(testing::TestServer& server, const Image& volume,
                      const v1::MorphologyRequest& frames_request) {
  v1::MorphologyRequest steps = frames_request;
  steps.clear_input();
  steps.clear_output();
  return testing::UnaryMorphology(server.stub(), volume, steps);
}

grpc::Status Call(testing::TestServer& server, const v1::MorphologyRequest& r,
                  v1::MorphologyResponse* response, std::string* timing = nullptr) {
  grpc::ClientContext ctx;
  const grpc::Status status = server.stub().Morphology(&ctx, r, response);
  const auto& trailers = ctx.GetServerTrailingMetadata();
  if (timing != nullptr && trailers.count("cuimg-timing") == 1) {
    const auto v = trailers.find("cuimg-timing")->second;
    *timing = std::string(v.data(), v.size());
  }
  return status;
}

void ExpectRefused(const grpc::Status& status, absl::string_view reason, absl::string_view field) {
  ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  const std::optional<ErrorDetails> details = ParseErrorDetails(status);
  ASSERT_TRUE(details.has_value()) << status.error_message();
  EXPECT_EQ(details->reason, reason) << status.error_message();
  EXPECT_EQ(details->field, field) << status.error_message();
}

TEST(DicomFramesService, HtJ2kFramesGiveTheResultOfTheirRawPixels) {
  testing::TestServer server;
  const std::vector<Image> slices = CtSlices(6);
  const v1::MorphologyRequest request = CtFramesRequest(slices);
  v1::MorphologyResponse response;
  std::string timing;
  const grpc::Status status = Call(server, request, &response, &timing);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::Image& image = response.result().image();
  EXPECT_EQ(image.pixel_type(), v1::PIXEL_TYPE_I16);
  EXPECT_EQ(image.depth(), 6u);
  EXPECT_DOUBLE_EQ(image.spacing().z_mm(), 2.5);
  EXPECT_EQ(image.data(), RawResult(server, RescaledVolume(slices), request));
  EXPECT_EQ(timing.find("decode_us=0 "), std::string::npos) << timing;
}

// max_decoded_pixels bounds each frame, as it bounds a PNG or JPEG: a CT of 512x512x300 (79 M
// pixels) is over its 64 M default and must not be refused for arriving as frames.
TEST(DicomFramesService, MaxDecodedPixelsBoundsAFrameNotTheVolume) {
  ServerOptions options = testing::TestServerOptions();
  options.limits.max_decoded_pixels = 45 * 31;  // one frame; the volume is 6 of them
  testing::TestServer server(options);
  const std::vector<Image> slices = CtSlices(6);
  const v1::MorphologyRequest request = CtFramesRequest(slices);
  v1::MorphologyResponse response;
  const grpc::Status status = Call(server, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.result().image().depth(), 6u);

  options.limits.max_decoded_pixels = 45 * 31 - 1;
  testing::TestServer small(options);
  ExpectRefused(Call(small, request, &response), "LIMIT_EXCEEDED", "input.dicom_frames");
}

TEST(DicomFramesService, RleNativeStoredValuesAndFractionalRescales) {
  testing::TestServer server;
  // Two 1x4 frames of signed 16-bit values: one RLE (2 segments), one native.
  v1::MorphologyRequest r;
  v1::DicomFrames* frames = r.mutable_input()->mutable_dicom_frames();
  frames->set_transfer_syntax_uid(kNative);
  v1::DicomPixelModule* m = frames->mutable_pixel_module();
  m->set_rows(1);
  m->set_columns(4);
  m->set_bits_allocated(16);
  m->set_pixel_signed(true);
  m->set_photometric_interpretation(v1::PHOTOMETRIC_INTERPRETATION_MONOCHROME1);
  const std::int16_t values[4] = {-3, 7, 100, -1000};
  frames->add_frames()->set_data(reinterpret_cast<const char*>(values), sizeof values);
  frames->mutable_frames(0)->set_rescale_slope(0.5);
  frames->mutable_frames(0)->set_rescale_intercept(1);
  r.add_steps()->set_op(v1::MORPHOLOGY_OP_ERODE);
  r.mutable_steps(0)->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  r.mutable_steps(0)->mutable_element()->set_width(1);
  r.mutable_steps(0)->mutable_element()->set_height(1);
  v1::MorphologyResponse response;
  grpc::Status status = Call(server, r, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.result().image().pixel_type(), v1::PIXEL_TYPE_F32);
  std::vector<float> got(4);
  std::memcpy(got.data(), response.result().image().data().data(), 16);
  EXPECT_EQ(got, (std::vector<float>{-0.5f, 4.5f, 51.0f, -499.0f}));

  // The same frame as RLE, delivered as stored values (i16), the rescale not read.
  std::string rle(64, '\0');
  rle[0] = 2;
  rle[4] = 64;
  rle[8] = 64 + 5;
  const std::string msb = {3, static_cast<char>(0xFF), 0, 0, static_cast<char>(0xFC)};
  const std::string lsb = {3, static_cast<char>(0xFD), 7, 100, 0x18};
  rle += msb + lsb;
  frames->set_transfer_syntax_uid(kRle);
  frames->mutable_frames(0)->set_data(rle);
  frames->set_stored_values(true);
  status = Call(server, r, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.result().image().pixel_type(), v1::PIXEL_TYPE_I16);
  EXPECT_EQ(response.result().image().data(),
            std::string(reinterpret_cast<const char*>(values), sizeof values));
}

TEST(DicomFramesService, ResultsReturnAsHtJ2kFramesOfTheRawResult) {
  testing::TestServer server;
  const std::vector<Image> slices = CtSlices(3);
  v1::MorphologyRequest request = CtFramesRequest(slices);
  request.mutable_output()->set_frame_encoding(v1::FRAME_ENCODING_HTJ2K_LOSSLESS);
  v1::MorphologyResponse response;
  const grpc::Status status = Call(server, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const std::string raw = RawResult(server, RescaledVolume(slices), request);
  const v1::ImageResult& result = response.result();
  EXPECT_TRUE(result.image().data().empty());
  EXPECT_EQ(result.image().depth(), 3u);
  const v1::DicomFrames& out = result.dicom_frames();
  EXPECT_EQ(out.transfer_syntax_uid(), kHtj2k);
  ASSERT_EQ(out.frames_size(), 3);
  FrameDescription d;
  d.rows = static_cast<int>(out.pixel_module().rows());
  d.columns = static_cast<int>(out.pixel_module().columns());
  d.bits_allocated = static_cast<int>(out.pixel_module().bits_allocated());
  d.bits_stored = static_cast<int>(out.pixel_module().bits_stored());
  d.is_signed = out.pixel_module().pixel_signed();
  EXPECT_TRUE(d.is_signed);
  std::string decoded;
  for (const v1::DicomFrame& f : out.frames()) {
    const absl::StatusOr<Image> slice =
        DecodeFrame(FrameSyntax::kHtj2kLossless, d,
                    absl::MakeConstSpan(reinterpret_cast<const std::uint8_t*>(f.data().data()),
                                        f.data().size()),
                    "f");
    ASSERT_TRUE(slice.ok()) << slice.status();
    decoded.append(reinterpret_cast<const char*>(slice->bytes()), slice->size_bytes());
  }
  EXPECT_EQ(decoded, raw);
}

TEST(DicomFramesService, RefusalsNameTheFrameTheFieldAndTheReason) {
  testing::TestServer server;
  const std::vector<Image> slices = CtSlices(4);
  v1::MorphologyResponse response;

  v1::MorphologyRequest cut = CtFramesRequest(slices);
  std::string* data =
      cut.mutable_input()->mutable_dicom_frames()->mutable_frames(2)->mutable_data();
  data->resize(data->size() / 2);
  ExpectRefused(Call(server, cut, &response), "CORRUPT_ENCODED_DATA",
                "input.dicom_frames.frames[2]");

  v1::MorphologyRequest overflow = CtFramesRequest(slices);
  overflow.mutable_input()->mutable_dicom_frames()->mutable_frames(3)->set_rescale_intercept(32000);
  ExpectRefused(Call(server, overflow, &response), "VALUE_OUT_OF_RANGE",
                "input.dicom_frames.frames[3]");

  v1::MorphologyRequest mpeg = CtFramesRequest(slices);
  mpeg.mutable_input()->mutable_dicom_frames()->set_transfer_syntax_uid("1.2.840.10008.1.2.4.100");
  ExpectRefused(Call(server, mpeg, &response), "UNSUPPORTED_ENCODING",
                "input.dicom_frames.transfer_syntax_uid");

  v1::MorphologyRequest colour = CtFramesRequest(slices);
  colour.mutable_input()->mutable_dicom_frames()->mutable_pixel_module()->set_samples_per_pixel(3);
  ExpectRefused(Call(server, colour, &response), "UNSUPPORTED_PIXEL_TYPE",
                "input.dicom_frames.pixel_module.samples_per_pixel");

  v1::MorphologyRequest fractional = CtFramesRequest(slices);
  fractional.mutable_input()->mutable_dicom_frames()->mutable_frames(0)->set_rescale_slope(0.5);
  fractional.mutable_output()->set_frame_encoding(v1::FRAME_ENCODING_HTJ2K_LOSSLESS);
  ExpectRefused(Call(server, fractional, &response), "INVALID_COMBINATION",
                "output.frame_encoding");  // an f32 result
}

TEST(DicomFramesService, GetServerInfoListsTheSyntaxes) {
  testing::TestServer server;
  grpc::ClientContext ctx;
  v1::ServerInfo info;
  ASSERT_TRUE(server.stub().GetServerInfo(&ctx, v1::GetServerInfoRequest(), &info).ok());
  const auto& decodable = info.decodable_transfer_syntaxes();
  for (const char* uid : {kHtj2k, kRle, kNative, "1.2.840.10008.1.2", "1.2.840.10008.1.2.4.90",
                          "1.2.840.10008.1.2.4.80", "1.2.840.10008.1.2.4.57"}) {
    EXPECT_NE(std::find(decodable.begin(), decodable.end(), uid), decodable.end()) << uid;
  }
  ASSERT_EQ(info.encodable_transfer_syntaxes_size(), 1);
  EXPECT_EQ(info.encodable_transfer_syntaxes(0), kHtj2k);
  EXPECT_EQ(info.frame_decoder(), "cpu");
  EXPECT_FALSE(info.version().empty());
}

}  // namespace
}  // namespace cuimg
