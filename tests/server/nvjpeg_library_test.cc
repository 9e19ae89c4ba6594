// nvJPEG loads at run time where the build found its header (the library needs no GPU to load
// and report its version), and a build without the header says why it has no GPU decoder.
#include "server/backend/nvjpeg_library.h"

#include "gtest/gtest.h"

namespace cuimg {
namespace {

TEST(NvjpegLibrary, LoadsWhereTheBuildFoundTheHeader) {
  absl::StatusOr<std::shared_ptr<const NvjpegLibrary>> lib = NvjpegLibrary::Load();
#ifdef CUIMG_HAVE_NVJPEG
  ASSERT_TRUE(lib.ok()) << lib.status();
  EXPECT_EQ((*lib)->version().rfind("13.", 0), 0u) << (*lib)->version();
  EXPECT_NE((*lib)->path().find("libnvjpeg.so.13"), std::string::npos) << (*lib)->path();
#else
  EXPECT_EQ(lib.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(lib.status().message().find("nvjpeg.h"), absl::string_view::npos);
#endif
}

}  // namespace
}  // namespace cuimg
