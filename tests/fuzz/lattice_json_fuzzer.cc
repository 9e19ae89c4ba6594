// libFuzzer target: the client's lattice JSON reader. Whatever the text: a status, and an
// accepted lattice passes the same validation the server applies.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "client/lattice_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<cuimg::Lattice> lattice = cuimg::LatticeFromJson(text, "fuzz.json");
  if (lattice.ok() && !cuimg::ValidateLattice(*lattice, "lattice").ok()) std::abort();
  return 0;
}
