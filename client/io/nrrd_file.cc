#include "client/io/nrrd_file.h"

#include <teem/biff.h>
#include <teem/nrrd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "client/io/atomic_output.h"

namespace cuimg {
namespace {

constexpr std::int64_t kMaxPixels = std::int64_t{1} << 30;

struct NrrdNuker {  // frees the array and the data Teem allocated
  void operator()(Nrrd* n) const { nrrdNuke(n); }
};
struct NrrdNixer {  // frees the array only: the data is the caller's
  void operator()(Nrrd* n) const { nrrdNix(n); }
};
struct IoStateNixer {
  void operator()(NrrdIoState* s) const { nrrdIoStateNix(s); }
};

// Teem reports through its "biff" message stack; take (and free) the message.
std::string TeemError() {
  char* message = biffGetDone(NRRD);
  std::string text = message != nullptr ? message : "unknown error";
  std::free(message);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

absl::StatusOr<PixelType> FromTeemType(int type, const std::string& path) {
  switch (type) {
    case nrrdTypeUChar:
      return PixelType::kU8;
    case nrrdTypeUShort:
      return PixelType::kU16;
    case nrrdTypeShort:
      return PixelType::kI16;
    case nrrdTypeFloat:
      return PixelType::kF32;
    case nrrdTypeUInt:
      return PixelType::kU32;  // label images
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": NRRD type ", airEnumStr(nrrdType, type),
                                                 " (expected uchar, ushort, short, float, uint)"));
}

int ToTeemType(PixelType type) {
  switch (type) {
    case PixelType::kU8:
      return nrrdTypeUChar;
    case PixelType::kU16:
      return nrrdTypeUShort;
    case PixelType::kI16:
      return nrrdTypeShort;
    case PixelType::kU32:
      return nrrdTypeUInt;
    case PixelType::kF32:
      break;
  }
  return nrrdTypeFloat;
}

absl::StatusOr<Extent> CheckHeader(const Nrrd* n, const std::string& path) {
  if (n->dim != 2 && n->dim != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": NRRD of dimension ", n->dim, " (expected 2 or 3, one channel)"));
  }
  Extent e{static_cast<std::int64_t>(n->axis[0].size), static_cast<std::int64_t>(n->axis[1].size),
           n->dim == 3 ? static_cast<std::int64_t>(n->axis[2].size) : 1};
  if (e.width < 1 || e.height < 1 || e.depth < 1 || e.width > 65536 || e.height > 65536 ||
      e.depth > 65536 || e.Pixels() > kMaxPixels) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": NRRD sizes ", e.width, "x", e.height,
                                                   "x", e.depth,
                                                   " (each in [1, 65536], at most 2^30 voxels)"));
  }
  return e;
}

double AxisSpacing(const Nrrd* n, unsigned int axis) {
  if (axis >= n->dim) return 0;
  double spacing = 0;
  double direction[NRRD_SPACE_DIM_MAX];
  const int status = nrrdSpacingCalculate(n, axis, &spacing, direction);
  if (status == nrrdSpacingStatusDirection || status == nrrdSpacingStatusScalarNoSpace ||
      status == nrrdSpacingStatusScalarWithSpace) {
    return std::isfinite(spacing) ? std::fabs(spacing) : 0;
  }
  return 0;
}

// The first line must be a NRRD magic, NRRD0001 to NRRD0005. Teem would also try its other
// formats (PNG, PNM, VTK, plain text), and its parser leaks on a malformed NRRD magic.
absl::Status CheckMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  char magic[9] = {};
  in.read(magic, sizeof(magic));
  if (in.gcount() != sizeof(magic) || std::memcmp(magic, "NRRD000", 7) != 0 || magic[7] < '1' ||
      magic[7] > '5' || (magic[8] != '\n' && magic[8] != '\r')) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a NRRD file (the first line must be NRRD0001 to NRRD0005)"));
  }
  return absl::OkStatus();
}

// Patient space of a 3D-space NRRD (LPS, or RAS turned to LPS) with directions on every axis and
// an origin; unknown otherwise.
PatientGeometry Geometry(const Nrrd* n) {
  PatientGeometry g;
  double flip[3] = {1, 1, 1};
  if (n->space == nrrdSpaceRightAnteriorSuperior) {
    flip[0] = flip[1] = -1;
  } else if (n->space != nrrdSpaceLeftPosteriorSuperior) {
    return g;
  }
  if (n->dim < 2 || n->dim > 3 || n->spaceDim != 3) return g;
  for (unsigned axis = 0; axis < n->dim; ++axis) {
    double norm = 0;
    for (int k = 0; k < 3; ++k)
      norm += n->axis[axis].spaceDirection[k] * n->axis[axis].spaceDirection[k];
    norm = std::sqrt(norm);
    if (!(norm > 0) || !std::isfinite(norm)) return g;
    for (int k = 0; k < 3; ++k) g.axes[axis][k] = flip[k] * n->axis[axis].spaceDirection[k] / norm;
  }
  for (int k = 0; k < 3; ++k) {
    if (!std::isfinite(n->spaceOrigin[k])) return g;
    g.origin[k] = flip[k] * n->spaceOrigin[k];
  }
  if (n->dim == 2) {  // the normal of a single slice
    const auto& a = g.axes[0];
    const auto& b = g.axes[1];
    g.axes[2] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
  }
  g.known = true;
  return g;
}

}  // namespace

absl::StatusOr<NrrdVolume> ReadNrrd(const std::string& path) {
  if (absl::Status s = CheckMagic(path); !s.ok()) return s;
  // The header first, so sizes are checked before Teem allocates the data.
  {
    std::unique_ptr<Nrrd, NrrdNuker> header(nrrdNew());
    std::unique_ptr<NrrdIoState, IoStateNixer> io(nrrdIoStateNew());
    io->skipData = AIR_TRUE;
    if (nrrdLoad(header.get(), path.c_str(), io.get()) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", TeemError()));
    }
    absl::StatusOr<PixelType> type = FromTeemType(header->type, path);
    if (!type.ok()) return type.status();
    if (absl::StatusOr<Extent> e = CheckHeader(header.get(), path); !e.ok()) return e.status();
  }
  std::unique_ptr<Nrrd, NrrdNuker> n(nrrdNew());
  if (nrrdLoad(n.get(), path.c_str(), nullptr) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": ", TeemError()));
  }
  absl::StatusOr<PixelType> type = FromTeemType(n->type, path);
  if (!type.ok()) return type.status();
  absl::StatusOr<Extent> extent = CheckHeader(n.get(), path);
  if (!extent.ok()) return extent.status();
  NrrdVolume out{Image(*type, *extent), {}, {}};
  std::memcpy(out.image.bytes(), n->data, out.image.size_bytes());  // Teem swapped to host order
  out.spacing = {AxisSpacing(n.get(), 0), AxisSpacing(n.get(), 1), AxisSpacing(n.get(), 2)};
  out.geometry = Geometry(n.get());
  return out;
}

namespace {

// WriteNrrd into `path` as it is (the caller picks a temporary name).
absl::Status WriteNrrdTo(const std::string& path, const ImageView& image,
                         const VoxelSpacing& spacing, NrrdEncoding encoding,
                         const PatientGeometry& geometry) {
  if (image.channels != 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": NRRD output needs one channel"));
  }
  std::unique_ptr<Nrrd, NrrdNixer> n(nrrdNew());
  const Extent& e = image.extent;
  const int wrapped =
      e.depth > 1 ? nrrdWrap_va(n.get(), image.data, ToTeemType(image.type), 3,
                                static_cast<size_t>(e.width), static_cast<size_t>(e.height),
                                static_cast<size_t>(e.depth))
                  : nrrdWrap_va(n.get(), image.data, ToTeemType(image.type), 2,
                                static_cast<size_t>(e.width), static_cast<size_t>(e.height));
  if (wrapped != 0) return absl::InternalError(absl::StrCat(path, ": ", TeemError()));
  if (geometry.known) {
    // Patient space: each axis' direction scaled by its spacing (Teem takes either spacings or
    // space directions, not both), and the first voxel's position.
    n->space = nrrdSpaceLeftPosteriorSuperior;
    n->spaceDim = 3;
    const double step[3] = {spacing.x_mm > 0 ? spacing.x_mm : 1,
                            spacing.y_mm > 0 ? spacing.y_mm : 1,
                            spacing.z_mm > 0 ? spacing.z_mm : 1};
    for (unsigned axis = 0; axis < n->dim; ++axis) {
      for (int k = 0; k < 3; ++k)
        n->axis[axis].spaceDirection[k] = geometry.axes[axis][k] * step[axis];
    }
    for (int k = 0; k < 3; ++k) n->spaceOrigin[k] = geometry.origin[k];
  } else if (spacing.Known()) {
    // Unknown axes stay NaN, which Teem leaves out of the header.
    auto or_nan = [](double v) { return v > 0 ? v : AIR_NAN; };
    if (e.depth > 1) {
      nrrdAxisInfoSet_va(n.get(), nrrdAxisInfoSpacing, or_nan(spacing.x_mm), or_nan(spacing.y_mm),
                         or_nan(spacing.z_mm));
    } else {
      nrrdAxisInfoSet_va(n.get(), nrrdAxisInfoSpacing, or_nan(spacing.x_mm), or_nan(spacing.y_mm));
    }
  }
  std::unique_ptr<NrrdIoState, IoStateNixer> io(nrrdIoStateNew());
  if (encoding == NrrdEncoding::kGzip) {
    if (!nrrdEncodingGzip->available()) {
      return absl::UnimplementedError("this Teem build has no gzip encoding");
    }
    io->encoding = nrrdEncodingGzip;
  } else {
    io->encoding = nrrdEncodingRaw;
  }
  if (nrrdSave(path.c_str(), n.get(), io.get()) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", TeemError()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteNrrd(const std::string& path, const ImageView& image, const VoxelSpacing& spacing,
                       NrrdEncoding encoding, const PatientGeometry& geometry) {
  return WriteAtomically(path, OutputKind::kFile, [&](const std::string& temp) {
    return WriteNrrdTo(temp, image, spacing, encoding, geometry);
  });
}

}  // namespace cuimg
