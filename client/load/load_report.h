// `cuimg load --report`: the plots of a run, drawn by client/load/load_report.py (embedded in the
// binary) with matplotlib in a python3 child process.
#ifndef CUIMG_CLIENT_LOAD_REPORT_H_
#define CUIMG_CLIENT_LOAD_REPORT_H_

#include <string>

#include "absl/status/status.h"

namespace cuimg {

// True for the outputs the report script writes: .html, .htm (self-contained page) and .png.
bool IsReportPath(const std::string& path);

// Writes the report of a run to `output` from its JSON summary and per-call CSV (SummaryJson,
// RecordsCsv), running python3 from PATH, or /usr/bin/python3 when that one lacks matplotlib.
// FAILED_PRECONDITION when python3 or matplotlib is missing, INTERNAL when the script fails (its
// message is on stderr).
absl::Status WriteLoadReport(const std::string& output, const std::string& summary_json,
                             const std::string& records_csv);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LOAD_REPORT_H_
