#include "client/load/load_report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/io/atomic_output.h"
#include "client/load/load_report_script.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

// Removes the scratch directory however the report ends.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cuimg-report-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

constexpr int kNoPython = 127;    // exec failed
constexpr int kNoMatplotlib = 3;  // load_report.py's own code

// Runs the command; its exit status (kNoPython when it could not start, 128 + N for signal N).
absl::StatusOr<int> RunScript(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    execvp(argv[0], argv.data());
    _exit(kNoPython);  // only async-signal-safe calls here
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

bool IsReportPath(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  return absl::EndsWith(lower, ".html") || absl::EndsWith(lower, ".htm") ||
         absl::EndsWith(lower, ".png");
}

absl::Status WriteLoadReport(const std::string& output, const std::string& summary_json,
                             const std::string& records_csv) {
  ScratchDir scratch;
  if (scratch.path().empty()) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  const std::string script = scratch.path() + "/load_report.py";
  const std::string json = scratch.path() + "/summary.json";
  const std::string csv = scratch.path() + "/records.csv";
  for (const auto& [path, text] : {std::pair<std::string, std::string>{script, kLoadReportScript},
                                   {json, summary_json},
                                   {csv, records_csv}}) {
    if (absl::Status s = WriteText(path, text); !s.ok()) return s;
  }
  // The script writes a temporary name beside `output` (same extension), renamed when it is done.
  return WriteAtomically(output, OutputKind::kFile, [&](const std::string& temp) -> absl::Status {
    // Debian's python3-matplotlib lives under /usr/bin/python3; a python3 earlier on PATH (a
    // virtualenv, pyenv) may lack it, so that one is tried second.
    int status = 0;
    for (const char* python : {"python3", "/usr/bin/python3"}) {
      std::vector<std::string> args = {python, script, json, csv, temp};
      if (python[0] != '/') args.insert(args.begin() + 2, "--quiet-if-no-matplotlib");
      CUIMG_ASSIGN_OR_RETURN(status, RunScript(std::move(args)));
      if (status != kNoPython && status != kNoMatplotlib) break;
    }
    if (status == 0) return absl::OkStatus();
    if (status == kNoPython) return absl::FailedPreconditionError("--report needs python3");
    if (status == kNoMatplotlib) {
      return absl::FailedPreconditionError("--report needs matplotlib (python3-matplotlib)");
    }
    return absl::InternalError(absl::StrCat("the report script failed (exit status ", status, ")"));
  });
}

}  // namespace cuimg
