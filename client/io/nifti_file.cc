#include "client/io/nifti_file.h"

#include <nifti2_io.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/io/atomic_output.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;

struct FreeNifti {
  void operator()(nifti_image* nim) const { nifti_image_free(nim); }
};
using NiftiPtr = std::unique_ptr<nifti_image, FreeNifti>;

// nifticlib prints to stderr by default; cuimg reports through statuses.
void QuietNifti() {
  static std::once_flag once;
  std::call_once(once, [] { nifti_set_debug_level(0); });
}

template <typename T>
double ValueAt(const void* data, std::size_t i) {
  return static_cast<double>(static_cast<const T*>(data)[i]);
}

double Value(int datatype, const void* data, std::size_t i) {
  switch (datatype) {
    case DT_UINT8:
      return ValueAt<std::uint8_t>(data, i);
    case DT_INT8:
      return ValueAt<std::int8_t>(data, i);
    case DT_INT16:
      return ValueAt<std::int16_t>(data, i);
    case DT_UINT16:
      return ValueAt<std::uint16_t>(data, i);
    case DT_UINT32:
      return ValueAt<std::uint32_t>(data, i);
    default:
      return ValueAt<float>(data, i);
  }
}

// Checks sizeof_hdr and dim[0] before nifticlib sees the header: nifticlib 3.0's header
// conversion loops up to dim[0] over its 8-entry dim array, so a dim[0] above 7 overwrites its
// stack (found by nifti_reader_fuzzer).
absl::Status CheckHeader(const std::string& path) {
  znzFile fp = znzopen(path.c_str(), "rb", absl::EndsWith(absl::AsciiStrToLower(path), ".gz"));
  if (znz_isnull(fp)) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  unsigned char h[24] = {};
  const std::size_t got = znzread(h, 1, sizeof h, fp);
  znzclose(fp);
  auto u32 = [&](int at, bool swap) {
    return swap ? std::uint32_t{h[at]} << 24 | std::uint32_t{h[at + 1]} << 16 |
                      std::uint32_t{h[at + 2]} << 8 | h[at + 3]
                : std::uint32_t{h[at + 3]} << 24 | std::uint32_t{h[at + 2]} << 16 |
                      std::uint32_t{h[at + 1]} << 8 | h[at];
  };
  std::int64_t dim0 = -1;
  for (const bool swap : {false, true}) {
    if (got < sizeof h) break;
    const std::uint32_t size = u32(0, swap);
    if (size == 348) {  // NIfTI-1 (or ANALYZE): dim[0] is a short at byte 40, read below
      dim0 = -2;
    } else if (size == 540) {  // NIfTI-2: dim[0] is an int64 at byte 16
      const std::uint64_t low = u32(16, swap), high = u32(20, swap);
      dim0 = static_cast<std::int64_t>(swap ? (low << 32 | high) : (high << 32 | low));
    } else {
      continue;
    }
    if (dim0 == -2) {
      fp = znzopen(path.c_str(), "rb", absl::EndsWith(absl::AsciiStrToLower(path), ".gz"));
      unsigned char d[42] = {};
      const bool read = !znz_isnull(fp) && znzread(d, 1, sizeof d, fp) == sizeof d;
      if (!znz_isnull(fp)) znzclose(fp);
      if (!read) break;
      dim0 = static_cast<std::int16_t>(swap ? (d[40] << 8 | d[41]) : (d[41] << 8 | d[40]));
    }
    if (dim0 < 1 || dim0 > 7) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": dim[0] ", dim0, " not in [1, 7]"));
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": not a NIfTI-1 or NIfTI-2 file (sizeof_hdr is neither 348 nor 540)"));
}

// 2 for a NIfTI-2 header (sizeof_hdr 540, either byte order), else 1: nifti_image's nifti_type
// says one file or two, not which version.
int HeaderVersion(const std::string& path) {
  znzFile fp = znzopen(path.c_str(), "rb", absl::EndsWith(absl::AsciiStrToLower(path), ".gz"));
  if (znz_isnull(fp)) return 1;
  unsigned char size[4] = {};
  const bool read = znzread(size, 1, 4, fp) == 4;
  znzclose(fp);
  const bool little = size[0] == 0x1c && size[1] == 0x02 && size[2] == 0 && size[3] == 0;
  const bool big = size[0] == 0 && size[1] == 0 && size[2] == 0x02 && size[3] == 0x1c;
  return read && (little || big) ? 2 : 1;
}

// The voxel data of `nim` (header read, data not loaded) as stored, swapped to this machine's
// byte order. nifticlib's own loader replaces every float NaN and infinity with 0; a NaN mask
// (nibabel writes them for "no data") must come through as NaN.
absl::StatusOr<std::vector<std::uint8_t>> ReadVoxels(const nifti_image& nim, std::uint64_t voxels) {
  const std::string file = nim.iname != nullptr ? nim.iname : "";
  znzFile fp = znzopen(file.c_str(), "rb", nifti_is_gzfile(file.c_str()));
  if (znz_isnull(fp)) return absl::NotFoundError(absl::StrCat(file, ": cannot open"));
  std::vector<std::uint8_t> data(static_cast<std::size_t>(voxels) * nim.nbyper);
  // znzseek returns fseek's 0 for a plain file and gzseek's new offset for a gzip one.
  const bool read = znzseek(fp, static_cast<znz_off_t>(nim.iname_offset), SEEK_SET) >= 0 &&
                    znzread(data.data(), 1, data.size(), fp) == data.size();
  znzclose(fp);
  if (!read) return absl::DataLossError(absl::StrCat(file, ": the voxel data does not read"));
  if (nim.byteorder != nifti_short_order() && nim.swapsize > 1) {
    nifti_swap_Nbytes(static_cast<std::int64_t>(voxels * nim.nbyper / nim.swapsize), nim.swapsize,
                      data.data());
  }
  return data;
}

// Millimetres per unit of a NIfTI spatial unit code; unknown (0) and anything else count as mm.
double MillimetresPer(int xyz_units) {
  switch (xyz_units) {
    case NIFTI_UNITS_METER:
      return 1000;
    case NIFTI_UNITS_MICRON:
      return 0.001;
    default:
      return 1;
  }
}

absl::Status WriteNiftiTo(const std::string& path, const ImageView& image,
                          const VoxelSpacing& spacing, const PatientGeometry& geometry,
                          const NiftiTransforms* keep);

}  // namespace

absl::StatusOr<NiftiVolume> ReadNifti(const std::string& path, std::int64_t max_voxels) {
  QuietNifti();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  if (absl::Status s = CheckHeader(path); !s.ok()) return s;
  NiftiPtr nim(nifti_image_read(path.c_str(), 0));
  if (nim == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a NIfTI-1 or NIfTI-2 file (nifticlib cannot read its header)"));
  }
  const std::int64_t ndim = nim->dim[0];
  if (ndim < 2 || ndim > 7) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": dim[0] ", ndim, " not in [2, 7]"));
  }
  for (int d = 1; d <= ndim; ++d) {
    if (nim->dim[d] < 1 || (d > 3 && nim->dim[d] != 1)) {
      return absl::UnimplementedError(
          absl::StrCat(path, ": dim[", d, "] = ", nim->dim[d],
                       " (cuimg reads 2D and 3D volumes; dimensions past the third must be 1)"));
    }
  }
  const std::int64_t width = nim->dim[1], height = nim->dim[2], depth = ndim >= 3 ? nim->dim[3] : 1;
  if (width > max_voxels || height > max_voxels || depth > max_voxels ||
      width * height > max_voxels || width * height * depth > max_voxels) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", width, "x", height, "x", depth,
                                                   " is more than ", max_voxels,
                                                   " voxels (the bound of every volume reader)"));
  }
  // NIfTI's xform codes are 0 (unknown) to 5; another value has no meaning a writer could keep.
  for (const int code : {nim->qform_code, nim->sform_code}) {
    if (code < 0 || code > 5) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": qform_code/sform_code ", code, " not in [0, 5]"));
    }
  }
  const int datatype = nim->datatype;
  if (datatype != DT_UINT8 && datatype != DT_INT8 && datatype != DT_INT16 &&
      datatype != DT_UINT16 && datatype != DT_FLOAT32 && datatype != DT_UINT32) {
    return absl::UnimplementedError(
        absl::StrCat(path, ": data type ", nifti_datatype_string(datatype),
                     " (cuimg reads uint8, int8, int16, uint16, float32 and uint32 labels)"));
  }
  const std::uint64_t voxels = static_cast<std::uint64_t>(width * height * depth);
  if (!absl::EndsWith(absl::AsciiStrToLower(path), ".gz")) {
    const std::uintmax_t need =
        static_cast<std::uintmax_t>(nim->iname_offset) + voxels * nim->nbyper;
    const std::uintmax_t have = fs::file_size(path, ec);
    if (ec || nim->iname_offset < 0 || have < need) {
      return absl::DataLossError(absl::StrCat(path, ": ", width, "x", height, "x", depth,
                                              " voxels need ", need, " bytes, the file has ",
                                              ec ? 0 : have));
    }
  }
  absl::StatusOr<std::vector<std::uint8_t>> raw = ReadVoxels(*nim, voxels);
  if (!raw.ok()) return raw.status();
  const void* data = raw->data();

  // A slope of 0 or not finite means unscaled (nibabel writes NaN for both); a valid slope needs a
  // finite intercept.
  const double slope = nim->scl_slope, inter = nim->scl_inter;
  const bool has_slope = std::isfinite(slope) && slope != 0;
  if (has_slope && !std::isfinite(inter)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": scl_slope ", slope, " with scl_inter not finite"));
  }
  const bool scaled = has_slope && !(slope == 1 && inter == 0);
  const bool integer_data = datatype != DT_FLOAT32;
  PixelType type;
  if (!scaled) {
    type = datatype == DT_UINT8     ? PixelType::kU8
           : datatype == DT_UINT16  ? PixelType::kU16
           : datatype == DT_FLOAT32 ? PixelType::kF32
           : datatype == DT_UINT32  ? PixelType::kU32
                                    : PixelType::kI16;
  } else {
    type = integer_data && slope == std::nearbyint(slope) && inter == std::nearbyint(inter)
               ? PixelType::kI16
               : PixelType::kF32;
  }
  NiftiVolume out;
  out.image = Image(type, Extent{width, height, depth});
  const bool same_layout = !scaled && datatype != DT_INT8;
  if (same_layout) {
    std::memcpy(out.image.bytes(), data, out.image.size_bytes());
  } else {
    for (std::uint64_t i = 0; i < voxels; ++i) {
      const double stored = Value(datatype, data, i);
      const double v = scaled ? stored * slope + inter : stored;
      if (type == PixelType::kF32) {
        const float f = static_cast<float>(v);
        // NaN and infinities stored in the file are data; only a finite value that scaling
        // carries beyond float32 is refused.
        if (!std::isfinite(f) && std::isfinite(stored)) {
          return absl::OutOfRangeError(
              absl::StrCat(path, ": voxel ", i, " is beyond float32 after scl_slope/scl_inter"));
        }
        out.image.As<float>()[i] = f;
      } else if (v < -32768 || v > 32767) {
        return absl::OutOfRangeError(
            absl::StrCat(path, ": voxel ", i, " is ", v,
                         " after scl_slope/scl_inter, outside i16 [-32768, "
                         "32767]; cuimg reads integer-scaled NIfTI as i16 and does not clamp"));
      } else {
        out.image.As<std::int16_t>()[i] = static_cast<std::int16_t>(v);
      }
    }
  }
  const double mm = MillimetresPer(nim->xyz_units);
  out.spacing = {mm * std::fabs(nim->pixdim[1]), mm * std::fabs(nim->pixdim[2]),
                 ndim >= 3 ? mm * std::fabs(nim->pixdim[3]) : 0};
  NiftiTransforms& t = out.transforms;
  t.version = HeaderVersion(path);
  t.qform_code = nim->qform_code;
  t.sform_code = nim->sform_code;
  t.quatern_b = nim->quatern_b;
  t.quatern_c = nim->quatern_c;
  t.quatern_d = nim->quatern_d;
  t.qoffset_x = nim->qoffset_x;
  t.qoffset_y = nim->qoffset_y;
  t.qoffset_z = nim->qoffset_z;
  t.qfac = nim->qfac;
  t.xyz_units = nim->xyz_units;
  t.time_units = nim->time_units;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) t.srow[r][c] = nim->sto_xyz.m[r][c];
  }
  const nifti_dmat44* m = nim->sform_code > 0   ? &nim->sto_xyz
                          : nim->qform_code > 0 ? &nim->qto_xyz
                                                : nullptr;
  if (m != nullptr) {
    // RAS to LPS: x and y change sign.
    const double flip[3] = {-1, -1, 1};
    bool ok = true;
    for (int c = 0; c < 3; ++c) {
      double norm = 0;
      for (int r = 0; r < 3; ++r) norm += m->m[r][c] * m->m[r][c];
      norm = std::sqrt(norm);
      if (!(norm > 0) || !std::isfinite(norm)) ok = false;
      for (int r = 0; r < 3; ++r) out.geometry.axes[c][r] = ok ? flip[r] * m->m[r][c] / norm : 0;
    }
    for (int r = 0; r < 3; ++r) out.geometry.origin[r] = flip[r] * m->m[r][3];
    out.geometry.known = ok;
  }
  return out;
}

absl::Status WriteNifti(const std::string& path, const ImageView& image,
                        const VoxelSpacing& spacing, const PatientGeometry& geometry,
                        const NiftiTransforms* keep) {
  return WriteAtomically(path, OutputKind::kFile, [&](const std::string& temp) {
    return WriteNiftiTo(temp, image, spacing, geometry, keep);
  });
}

namespace {

// WriteNifti into `path` as it is (the caller picks a temporary name).
absl::Status WriteNiftiTo(const std::string& path, const ImageView& image,
                          const VoxelSpacing& spacing, const PatientGeometry& geometry,
                          const NiftiTransforms* keep) {
  QuietNifti();
  int datatype = 0;
  switch (image.type) {
    case PixelType::kU8:
      datatype = DT_UINT8;
      break;
    case PixelType::kI16:
      datatype = DT_INT16;
      break;
    case PixelType::kU16:
      datatype = DT_UINT16;
      break;
    case PixelType::kF32:
      datatype = DT_FLOAT32;
      break;
    case PixelType::kU32:
      datatype = DT_UINT32;  // label images
      break;
    default:
      break;
  }
  if (datatype == 0 || image.channels != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": NIfTI output takes one channel of u8, i16, u16, f32 or u32"));
  }
  const Extent& e = image.extent;
  const int64_t dims[8] = {e.depth > 1 ? 3 : 2, e.width, e.height, e.depth, 1, 1, 1, 1};
  NiftiPtr nim(nifti_make_new_nim(dims, datatype, 0));
  if (nim == nullptr)
    return absl::InternalError(absl::StrCat(path, ": nifticlib cannot make a header"));
  const bool nifti2 = (keep != nullptr && keep->version == 2) || e.width > 32767 ||
                      e.height > 32767 || e.depth > 32767;
  const double step[3] = {spacing.x_mm > 0 ? spacing.x_mm : 1, spacing.y_mm > 0 ? spacing.y_mm : 1,
                          spacing.z_mm > 0 ? spacing.z_mm : 1};
  // A kept unit is kept with its scale: pixdim in metres for a file in metres.
  nim->xyz_units = keep != nullptr ? keep->xyz_units : NIFTI_UNITS_MM;
  nim->time_units = keep != nullptr ? keep->time_units : 0;
  const double per = keep != nullptr ? MillimetresPer(keep->xyz_units) : 1;
  nim->dx = nim->pixdim[1] = step[0] / per;
  nim->dy = nim->pixdim[2] = step[1] / per;
  nim->dz = nim->pixdim[3] = step[2] / per;
  nim->scl_slope = 0;
  nim->scl_inter = 0;
  if (keep != nullptr) {
    nim->qform_code = keep->qform_code;
    nim->sform_code = keep->sform_code;
    nim->quatern_b = keep->quatern_b;
    nim->quatern_c = keep->quatern_c;
    nim->quatern_d = keep->quatern_d;
    nim->qoffset_x = keep->qoffset_x;
    nim->qoffset_y = keep->qoffset_y;
    nim->qoffset_z = keep->qoffset_z;
    nim->qfac = keep->qfac;
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 4; ++c) nim->sto_xyz.m[r][c] = keep->srow[r][c];
    }
  } else if (geometry.known) {
    // LPS to RAS: x and y change sign; columns are the axes scaled by the spacing.
    const double flip[3] = {-1, -1, 1};
    nifti_dmat44 r{};
    for (int row = 0; row < 3; ++row) {
      for (int c = 0; c < 3; ++c) r.m[row][c] = flip[row] * geometry.axes[c][row] * step[c];
      r.m[row][3] = flip[row] * geometry.origin[row];
    }
    r.m[3][3] = 1;
    nim->sto_xyz = r;
    double dx = 0, dy = 0, dz = 0;
    nifti_dmat44_to_quatern(r, &nim->quatern_b, &nim->quatern_c, &nim->quatern_d, &nim->qoffset_x,
                            &nim->qoffset_y, &nim->qoffset_z, &dx, &dy, &dz, &nim->qfac);
    nim->qform_code = nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
  }
  // nifticlib 3.0's nifti_image_write takes a NIfTI-2 .nii for a header/image pair and writes
  // the data over its own header, so cuimg writes the one-file layout itself: the header
  // nifticlib makes, the 4-byte extension flag (none), the data.
  nim->nifti_type = nifti2 ? NIFTI_FTYPE_NIFTI2_1 : NIFTI_FTYPE_NIFTI1_1;
  nim->iname_offset = nifti2 ? 544 : 352;  // header, then the 4-byte extension flag
  nifti_1_header header1{};
  nifti_2_header header2{};
  if ((nifti2 ? nifti_convert_nim2n2hdr(nim.get(), &header2)
              : nifti_convert_nim2n1hdr(nim.get(), &header1)) != 0) {
    return absl::InternalError(absl::StrCat(path, ": nifticlib cannot make the header"));
  }
  const bool gzip = absl::EndsWith(absl::AsciiStrToLower(path), ".gz");
  znzFile fp = znzopen(path.c_str(), "wb", gzip ? 1 : 0);
  if (znz_isnull(fp)) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create"));
  const char extension[4] = {0, 0, 0, 0};
  const std::size_t data_bytes = static_cast<std::size_t>(nim->nvox) * nim->nbyper;
  const bool written = (nifti2 ? znzwrite(&header2, sizeof header2, 1, fp)
                               : znzwrite(&header1, sizeof header1, 1, fp)) == 1 &&
                       znzwrite(extension, 1, 4, fp) == 4 &&
                       znzwrite(image.data, 1, data_bytes, fp) == data_bytes;
  if (znzclose(fp) != 0 || !written) {
    return absl::DataLossError(absl::StrCat(path, ": write failed"));
  }
  NiftiPtr back(nifti_image_read(path.c_str(), 0));
  if (back == nullptr || back->nvox != nim->nvox) {
    return absl::DataLossError(absl::StrCat(path, ": the written header does not read back"));
  }
  return absl::OkStatus();
}

}  // namespace

}  // namespace cuimg
