// Outputs that appear whole or not at all. Every writer of the client (images, volumes, meshes,
// reports, DICOM series folders) writes under a temporary name in the output's own folder and
// renames it into place once complete, so a failed run never leaves a partial file under the
// output's name and a rerun never meets one. rename(2) within one file system is atomic: a reader
// sees the old file or the new one.
#ifndef CUIMG_CLIENT_IO_ATOMIC_OUTPUT_H_
#define CUIMG_CLIENT_IO_ATOMIC_OUTPUT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cuimg {

enum class OutputKind {
  kFile,
  // A folder of files (a DICOM series) moved into place as one: the final folder must not exist or
  // be empty (ALREADY_EXISTS otherwise, before anything is written: two series never mix).
  kFolder,
};

// Outputs staged under temporary names and moved into place together by Commit(): a command that
// writes several files (gradient's gx, gy and magnitude; detect's frames) leaves all of them or
// none. Destroying it without a successful Commit() removes every staged path and the folders it
// created. Not thread-safe.
class StagedOutputs {
 public:
  StagedOutputs() = default;
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;
  ~StagedOutputs();

  // Reserves `path` and returns the temporary path to write its content to: a sibling of `path`
  // named ".cuimg-tmp-PID-N-NAME" (it keeps NAME's extensions, which the writers dispatch on).
  // A kFile's temporary file is left for the writer to create, in a folder that must exist; a
  // kFolder's temporary folder is created empty, its missing parents too. INVALID_ARGUMENT for an
  // empty path, a kFile path that is a folder, or a path staged twice; ALREADY_EXISTS per
  // OutputKind; PERMISSION_DENIED when a folder cannot be created.
  absl::StatusOr<std::string> Stage(const std::string& path, OutputKind kind = OutputKind::kFile);

  // Creates `folder` and its missing parents, for files staged in it later; a discard removes
  // what this created (while empty). OK when it exists; PERMISSION_DENIED when it cannot be made.
  absl::Status CreateFolder(const std::string& folder);

  // Renames every staged output into place, in the order staged (a file replaces an existing
  // file of that name). On an error the outputs not yet renamed are removed and the status names
  // the output; those already in place stay. Once committed, destruction removes nothing.
  absl::Status Commit();

  // Removes what was staged (and the folders made for it) now; Commit() then has nothing to do.
  void Discard();

  // `status` with every temporary path in its message replaced by its final path, so errors from
  // writers name the output the user asked for. Payloads are kept.
  absl::Status Named(const absl::Status& status) const;

 private:
  struct Entry {
    std::string path;
    std::string temp;
    OutputKind kind;
  };
  std::vector<Entry> entries_;
  // Made by Stage or CreateFolder, deepest last: removed in reverse (while empty) by a discard.
  std::vector<std::string> created_folders_;
};

// Writes one output: `write` gets the temporary path (a kFolder's already created) and the result
// is renamed into place when it returns OK; otherwise, or when the rename fails, nothing is left
// under either name and `write`'s status is returned with the temporary path replaced by `path`.
// Stage's errors as they are.
absl::Status WriteAtomically(const std::string& path, OutputKind kind,
                             const std::function<absl::Status(const std::string& temp)>& write);

// `text` written to `path` through WriteAtomically (reports, JSON, CSV).
absl::Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_ATOMIC_OUTPUT_H_
