// nvJPEG2000 loads at run time where the build found its header (the library needs no GPU to
// load and report its version), and a build without the header says why frames decode on the
// CPU. Refusal, which routes frames between nvJPEG2000 and the CPU, reads only headers.
#include "server/backend/nvjpeg2k_library.h"

#include "cuimg/codec/frame_encode.h"
#include "gtest/gtest.h"
#include "server/backend/nvjpeg2k_frames.h"

namespace cuimg {
namespace {

TEST(Nvjpeg2kLibrary, LoadsWhereTheBuildFoundTheHeader) {
  absl::StatusOr<std::shared_ptr<const Nvjpeg2kLibrary>> lib = Nvjpeg2kLibrary::Load();
#ifdef CUIMG_HAVE_NVJPEG2K
  ASSERT_TRUE(lib.ok()) << lib.status();
  EXPECT_EQ((*lib)->version().rfind("0.", 0), 0u) << (*lib)->version();
  EXPECT_NE((*lib)->path().find("libnvjpeg2k.so.0"), std::string::npos) << (*lib)->path();
#else
  EXPECT_EQ(lib.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(lib.status().message().find("nvjpeg2k.h"), absl::string_view::npos);
#endif
}

TEST(Nvjpeg2kRefusal, TakesOnlyCodestreamsOfTheDescribedSize) {
  Image slice(PixelType::kU16, Extent{40, 30, 1});
  const FrameDescription d = LosslessFrameDescription(slice.view());
  const std::vector<std::uint8_t> ht =
      *EncodeLosslessFrame(FrameSyntax::kHtj2kLossless, slice.view());
  EXPECT_EQ(Nvjpeg2kDevice::Refusal(FrameSyntax::kHtj2kLossless, d, ht), "");
  EXPECT_EQ(Nvjpeg2kDevice::Refusal(FrameSyntax::kJ2k, d, ht), "");  // the codestream decides
  FrameDescription wider = d;
  wider.columns = 41;
  EXPECT_NE(Nvjpeg2kDevice::Refusal(FrameSyntax::kHtj2kLossless, wider, ht).find("40x30"),
            std::string::npos);
  EXPECT_NE(Nvjpeg2kDevice::Refusal(FrameSyntax::kHtj2kLossless, d,
                                    absl::MakeConstSpan(ht.data(), ht.size() - 3)),
            "");
  EXPECT_NE(Nvjpeg2kDevice::Refusal(FrameSyntax::kRle, d, ht), "");
}

}  // namespace
}  // namespace cuimg
