// The multipart/related parser DICOMweb answers go through: what Orthanc and RFC 2046 bodies look
// like (preamble, padding, headers or none, epilogue), the malformed ones it must refuse, and
// DICOMweb URLs.
#include "client/io/multipart.h"

#include <string>
#include <vector>

#include "client/io/dicomweb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cuimg {
namespace {

TEST(MultipartBoundaryTest, ReadsQuotedAndPlainParameters) {
  EXPECT_EQ(*MultipartBoundary("multipart/related; type=\"application/dicom\"; boundary=ab-12"),
            "ab-12");
  EXPECT_EQ(*MultipartBoundary("Multipart/Related;BOUNDARY=\"a b:c\";type=application/dicom"),
            "a b:c");
}

TEST(MultipartBoundaryTest, RefusesOtherTypesAndBadBoundaries) {
  EXPECT_THAT(MultipartBoundary("application/dicom").status().message(),
              ::testing::HasSubstr("expected multipart/related"));
  EXPECT_THAT(MultipartBoundary("multipart/related; type=x").status().message(),
              ::testing::HasSubstr("without a boundary"));
  EXPECT_FALSE(MultipartBoundary("multipart/related; boundary=").ok());
  EXPECT_FALSE(MultipartBoundary("multipart/related; boundary=" + std::string(71, 'a')).ok());
  EXPECT_FALSE(MultipartBoundary("multipart/related; boundary=a\r\nb").ok());
}

TEST(SplitMultipartTest, ReadsPartsWithPreambleHeadersPaddingAndEpilogue) {
  const std::string body =
      "preamble\r\n--xyz \t\r\nContent-Type: application/dicom\r\nX: y\r\n\r\nDICM\r\n--\r\n"
      "--xyz\r\n\r\nsecond\r\n--xyz--\r\nepilogue";
  auto parts = SplitMultipart(body, "xyz", 10);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].body, "DICM\r\n--");
  EXPECT_EQ(MultipartHeader((*parts)[0], "content-type"), "application/dicom");
  EXPECT_EQ(MultipartHeader((*parts)[0], "Missing"), "");
  EXPECT_EQ((*parts)[1].headers, "");
  EXPECT_EQ((*parts)[1].body, "second");
}

TEST(SplitMultipartTest, RefusesMalformedBodies) {
  EXPECT_THAT(SplitMultipart("no boundary here", "b", 5).status().message(),
              ::testing::HasSubstr("no boundary line"));
  EXPECT_THAT(SplitMultipart("--b\r\nContent-Type: x\r\n", "b", 5).status().message(),
              ::testing::HasSubstr("do not end with a blank line"));
  EXPECT_THAT(SplitMultipart("--b\r\n\r\ntruncated", "b", 5).status().message(),
              ::testing::HasSubstr("truncated"));
  EXPECT_THAT(SplitMultipart("--bX\r\n\r\nx\r\n--b--", "b", 5).status().message(),
              ::testing::HasSubstr("does not end in CRLF"));
  EXPECT_TRUE(absl::IsResourceExhausted(
      SplitMultipart("--b\r\n\r\n1\r\n--b\r\n\r\n2\r\n--b--", "b", 1).status()));
}

TEST(SplitMultipartTest, ReadsWhatJoinWrites) {
  const std::vector<absl::string_view> parts = {"", "\r\n--", absl::string_view("a\0b", 3)};
  const std::string boundary = NewMultipartBoundary(parts);
  auto split = SplitMultipart(JoinMultipart(parts, boundary, "application/dicom"), boundary, 3);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->size(), 3u);
  for (std::size_t i = 0; i < parts.size(); ++i) EXPECT_EQ((*split)[i].body, parts[i]);
}

TEST(DicomwebUrlTest, ParsesSeriesAndServiceUrls) {
  auto series = ParseDicomwebSeriesUrl(
      "dicomweb+https://pacs.example:8443/dicom-web/studies/1.2.3/series/4.5/");
  ASSERT_TRUE(series.ok()) << series.status();
  EXPECT_EQ(series->base, "https://pacs.example:8443/dicom-web");
  EXPECT_EQ(series->study_uid, "1.2.3");
  EXPECT_EQ(series->series_uid, "4.5");
  EXPECT_EQ(*ParseDicomwebServiceUrl("dicomweb+http://127.0.0.1:8042/dicom-web/"),
            "http://127.0.0.1:8042/dicom-web");
}

TEST(DicomwebUrlTest, NamesTheWrongPart) {
  EXPECT_THAT(ParseDicomwebSeriesUrl("https://h/studies/1/series/2").status().message(),
              ::testing::HasSubstr("expected dicomweb+"));
  EXPECT_THAT(ParseDicomwebSeriesUrl("dicomweb+file:///studies/1/series/2").status().message(),
              ::testing::HasSubstr("http or https"));
  EXPECT_THAT(ParseDicomwebSeriesUrl("dicomweb+http://h/studies/1/series/2?x").status().message(),
              ::testing::HasSubstr("no query"));
  EXPECT_THAT(ParseDicomwebSeriesUrl("dicomweb+http://h/studies/1").status().message(),
              ::testing::HasSubstr("ends in /studies/"));
  EXPECT_THAT(ParseDicomwebSeriesUrl("dicomweb+http://h/studies/1a/series/2").status().message(),
              ::testing::HasSubstr("study UID"));
  EXPECT_THAT(ParseDicomwebSeriesUrl("dicomweb+http://h/studies/1/series/" + std::string(65, '1'))
                  .status()
                  .message(),
              ::testing::HasSubstr("series UID"));
  EXPECT_THAT(ParseDicomwebServiceUrl("dicomweb+http://h/web/studies/1").status().message(),
              ::testing::HasSubstr("without /studies"));
}

TEST(ArchiveReasonTest, QuotesWhatTheArchiveSaidSafely) {
  // Orthanc 1.10's answer when it cannot transcode a JPEG 2000 instance to the default syntax.
  HttpResponse orthanc{
      500, "application/json",
      "{\n\t\"HttpError\" : \"Internal Server Error\",\n\t\"Message\" : "
      "\"Error encountered within the plugin engine\",\n\t\"OrthancStatus\" : 1\n}"};
  EXPECT_EQ(ArchiveReason(orthanc), "Error encountered within the plugin engine");
  HttpResponse details{400, "application/json",
                       R"({"Details": "Unsupported transfer syntax in WADO-RS: 1.2.3",)"
                       R"( "Message": "Bad request"})"};
  EXPECT_EQ(ArchiveReason(details), "Unsupported transfer syntax in WADO-RS: 1.2.3");
  HttpResponse text{503, "text/plain", "Service \x1b[31mdown\x7f\tfor now\r\nsecond line"};
  EXPECT_EQ(ArchiveReason(text), "Service [31mdown for now");
  EXPECT_EQ(ArchiveReason(HttpResponse{500, "text/plain", std::string(5000, 'x')}).size(), 200u);
  EXPECT_EQ(ArchiveReason(HttpResponse{500, "", ""}), "");
  EXPECT_EQ(ArchiveReason(HttpResponse{500, "application/json", "[1, 2]"}), "");
}

}  // namespace
}  // namespace cuimg
