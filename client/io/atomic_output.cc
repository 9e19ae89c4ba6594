#include "client/io/atomic_output.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;

// "dir/name/" names the folder "dir/name": the trailing separator is not part of the name.
fs::path Normalized(const std::string& path) {
  fs::path p(path);
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

// A name no other staging of this process shares; the process id keeps concurrent runs apart.
fs::path TempSibling(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  return parent /
         absl::StrCat(".cuimg-tmp-", getpid(), "-", counter++, "-", path.filename().string());
}

void RemoveQuietly(const std::string& path) {
  std::error_code ignored;
  fs::remove_all(path, ignored);
}

}  // namespace

StagedOutputs::~StagedOutputs() { Discard(); }

absl::Status StagedOutputs::CreateFolder(const std::string& folder) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = Normalized(folder); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (!p.has_parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!fs::create_directory(*it, ec) && ec) {
      return absl::PermissionDeniedError(
          absl::StrCat(it->string(), ": cannot create the folder: ", ec.message()));
    }
    created_folders_.push_back(it->string());
  }
  if (!fs::is_directory(Normalized(folder), ec)) {
    return absl::InvalidArgumentError(absl::StrCat(folder, ": not a folder"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> StagedOutputs::Stage(const std::string& path, OutputKind kind) {
  if (path.empty()) return absl::InvalidArgumentError("empty output path");
  const fs::path target = Normalized(path);
  for (const Entry& e : entries_) {
    if (e.path == target.string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": the same output twice"));
    }
  }
  std::error_code ec;
  const fs::file_status status = fs::status(target, ec);
  if (kind == OutputKind::kFile) {
    if (fs::is_directory(status)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": is a folder, not a file"));
    }
    Entry entry{target.string(), TempSibling(target).string(), kind};
    entries_.push_back(entry);
    return entry.temp;
  }
  if (fs::exists(status) && (!fs::is_directory(status) || !fs::is_empty(target, ec))) {
    return absl::AlreadyExistsError(absl::StrCat(
        path, fs::is_directory(status) ? ": not empty (a new series needs a folder of its own)"
                                       : ": is a file, not a folder"));
  }
  if (target.has_parent_path()) CUIMG_RETURN_IF_ERROR(CreateFolder(target.parent_path().string()));
  // A leftover of a crashed run may hold a name: take the next.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path temp = TempSibling(target);
    if (fs::create_directory(temp, ec)) {
      entries_.push_back(Entry{target.string(), temp.string(), kind});
      return temp.string();
    }
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot create a folder beside it: ", ec.message()));
    }
  }
  return absl::PermissionDeniedError(absl::StrCat(path, ": no free temporary name beside it"));
}

absl::Status StagedOutputs::Commit() {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    std::error_code ec;
    fs::rename(entries_[i].temp, entries_[i].path, ec);
    if (ec) {
      const std::string failed = entries_[i].path;
      // What is in place stays; the rest goes.
      entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(i));
      created_folders_.clear();
      Discard();
      return absl::PermissionDeniedError(
          absl::StrCat(failed, ": cannot move the written output into place: ", ec.message()));
    }
  }
  entries_.clear();
  created_folders_.clear();
  return absl::OkStatus();
}

void StagedOutputs::Discard() {
  for (const Entry& e : entries_) RemoveQuietly(e.temp);
  entries_.clear();
  for (auto it = created_folders_.rbegin(); it != created_folders_.rend(); ++it) {
    std::error_code ignored;
    if (fs::is_empty(*it, ignored)) fs::remove(*it, ignored);
  }
  created_folders_.clear();
}

absl::Status StagedOutputs::Named(const absl::Status& status) const {
  if (status.ok()) return status;
  std::string message(status.message());
  for (const Entry& e : entries_) message = absl::StrReplaceAll(message, {{e.temp, e.path}});
  if (message == status.message()) return status;
  absl::Status out(status.code(), message);
  status.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& payload) {
    out.SetPayload(type_url, payload);
  });
  return out;
}

absl::Status WriteAtomically(const std::string& path, OutputKind kind,
                             const std::function<absl::Status(const std::string& temp)>& write) {
  StagedOutputs staged;
  CUIMG_ASSIGN_OR_RETURN(const std::string temp, staged.Stage(path, kind));
  if (absl::Status s = write(temp); !s.ok()) return staged.Named(s);
  return staged.Commit();
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  return WriteAtomically(path, OutputKind::kFile, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat(temp, ": cannot create"));
    out << text;
    out.close();
    if (!out) return absl::DataLossError(absl::StrCat(temp, ": write failed"));
    return absl::OkStatus();
  });
}

}  // namespace cuimg
