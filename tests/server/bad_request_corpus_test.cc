// The bad-request corpus, part 1: every request one mutation away from a valid one, for every
// validator (each scalar field at any depth set to edge values, each message cleared or set
// empty, each repeated field emptied, grown or given an edge value), walked over the validators
// in process. Every refusal keeps the error contract (tests/testing/error_contract.h): a reason
// from error_reason.proto set where it was raised, and a field that resolves in the request
// message, indices and oneofs included, that the message starts with. Part 2
// (bad_request_service_test.cc) walks the refusals only the service can make.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cuimg/v1/resident.pb.h"
#include "server/validation/request_validation.h"
#include "tests/testing/error_contract.h"

namespace cuimg {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A mutation: applied to a copy of the valid request.
using Mutation = std::function<void(Message&)>;

// Edge values of each field type: zero, small and odd values, the server's limits and past them,
// and non-finite numbers.
const std::vector<std::uint64_t> kUnsigned = {0,
                                              1,
                                              2,
                                              3,
                                              8,
                                              65,
                                              1024,
                                              70000,
                                              1ull << 31,
                                              1ull << 32,
                                              std::numeric_limits<std::uint64_t>::max()};
const std::vector<double> kDoubles = {0,
                                      -1,
                                      0.5,
                                      1,
                                      1.5,
                                      17,
                                      1e9,
                                      std::nan(""),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity()};
const std::vector<int> kEnums = {0, 1, 2, 3, 4, 99};

void SetScalar(Message& m, const FieldDescriptor* f, int index, std::uint64_t u, double d, int e,
               const std::string& text) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32:
      rep ? r->SetRepeatedUInt32(&m, f, index, static_cast<std::uint32_t>(u))
          : r->SetUInt32(&m, f, static_cast<std::uint32_t>(u));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      rep ? r->SetRepeatedUInt64(&m, f, index, u) : r->SetUInt64(&m, f, u);
      break;
    case FieldDescriptor::CPPTYPE_INT32:
      rep ? r->SetRepeatedInt32(&m, f, index, static_cast<std::int32_t>(u))
          : r->SetInt32(&m, f, static_cast<std::int32_t>(u));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      rep ? r->SetRepeatedInt64(&m, f, index, static_cast<std::int64_t>(u))
          : r->SetInt64(&m, f, static_cast<std::int64_t>(u));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      rep ? r->SetRepeatedDouble(&m, f, index, d) : r->SetDouble(&m, f, d);
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      rep ? r->SetRepeatedFloat(&m, f, index, static_cast<float>(d))
          : r->SetFloat(&m, f, static_cast<float>(d));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      rep ? r->SetRepeatedBool(&m, f, index, u != 0) : r->SetBool(&m, f, u != 0);
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      rep ? r->SetRepeatedEnumValue(&m, f, index, e) : r->SetEnumValue(&m, f, e);
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      rep ? r->SetRepeatedString(&m, f, index, text) : r->SetString(&m, f, text);
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
}

// The values one scalar field (element `index` of a repeated one, or -1) takes, as mutations of
// the message holding it; `current` is its text now (bytes and strings).
void ScalarMutations(const FieldDescriptor* f, int index, const std::string& current,
                     const std::function<void(Mutation)>& emit) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      for (double d : kDoubles) {
        emit([=](Message& m) { SetScalar(m, f, index, 0, d, 0, ""); });
      }
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      for (int e : kEnums) emit([=](Message& m) { SetScalar(m, f, index, 0, 0, e, ""); });
      break;
    case FieldDescriptor::CPPTYPE_STRING: {
      std::vector<std::string> texts = {"", "x", current + "x", std::string(129, 'h'), "/"};
      if (!current.empty()) texts.push_back(current.substr(0, current.size() - 1));
      for (const std::string& t : texts) {
        emit([=](Message& m) { SetScalar(m, f, index, 0, 0, 0, t); });
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
    default:
      for (std::uint64_t u : kUnsigned) {
        emit([=](Message& m) { SetScalar(m, f, index, u, 0, 0, ""); });
      }
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT32 ||
          f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
        emit([=](Message& m) { SetScalar(m, f, index, static_cast<std::uint64_t>(-1), 0, 0, ""); });
      }
      break;
  }
}

// Every mutation of `message` (reached from the root by `reach`), recursing into the messages it
// holds, each as a mutation of the root.
void Mutations(const Message& message, const std::function<Message&(Message&)>& reach,
               const std::function<void(Mutation)>& emit) {
  const Reflection* r = message.GetReflection();
  const google::protobuf::Descriptor* type = message.GetDescriptor();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* f = type->field(i);
    auto at = [reach](Mutation change) {
      return [reach, change](Message& root) { change(reach(root)); };
    };
    auto emit_here = [&](Mutation change) { emit(at(std::move(change))); };
    if (f->is_repeated()) {
      const int size = r->FieldSize(message, f);
      emit_here([f](Message& m) { m.GetReflection()->ClearField(&m, f); });
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        if (size == 0) {
          emit_here([f](Message& m) { m.GetReflection()->AddMessage(&m, f); });
          continue;
        }
        emit_here([f, size](Message& m) {
          const Reflection* mr = m.GetReflection();
          mr->AddMessage(&m, f)->CopyFrom(mr->GetRepeatedMessage(m, f, size - 1));
        });
        Mutations(
            r->GetRepeatedMessage(message, f, 0),
            [reach, f](Message& root) -> Message& {
              Message& m = reach(root);
              return *m.GetReflection()->MutableRepeatedMessage(&m, f, 0);
            },
            emit);
      } else if (size > 0) {
        const std::string current = f->cpp_type() == FieldDescriptor::CPPTYPE_STRING
                                        ? r->GetRepeatedString(message, f, 0)
                                        : std::string();
        ScalarMutations(f, 0, current, emit_here);
        emit_here([f](Message& m) { m.GetReflection()->RemoveLast(&m, f); });
      }
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!r->HasField(message, f)) {
        emit_here([f](Message& m) { m.GetReflection()->MutableMessage(&m, f); });
        continue;
      }
      emit_here([f](Message& m) { m.GetReflection()->ClearField(&m, f); });
      Mutations(
          r->GetMessage(message, f),
          [reach, f](Message& root) -> Message& {
            Message& m = reach(root);
            return *m.GetReflection()->MutableMessage(&m, f);
          },
          emit);
      continue;
    }
    const std::string current =
        f->cpp_type() == FieldDescriptor::CPPTYPE_STRING ? r->GetString(message, f) : "";
    ScalarMutations(f, -1, current, emit_here);
  }
}

// A validator under test: a valid root message and how to validate it.
struct Target {
  std::string name;
  std::shared_ptr<const Message> valid;
  std::function<absl::Status(const Message&)> validate;
};

v1::Image* GrayImage(v1::Image* image, int width, int height, int depth = 0) {
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(width);
  image->set_height(height);
  image->set_depth(depth);
  image->set_data(std::string(static_cast<std::size_t>(width) * height * std::max(depth, 1), '\7'));
  return image;
}

v1::MorphologyStep* Step(v1::MorphologyRequest* r, int width, int height) {
  v1::MorphologyStep* step = r->add_steps();
  step->set_op(v1::MORPHOLOGY_OP_OPEN);
  step->set_iterations(2);
  step->set_border_mode(v1::BORDER_MODE_CONSTANT);
  step->set_border_value(3);
  v1::StructuringElement* e = step->mutable_element();
  e->set_shape(v1::ELEMENT_SHAPE_CUSTOM);
  e->set_width(width);
  e->set_height(height);
  e->set_anchor_x(0);
  e->set_mask(std::string(static_cast<std::size_t>(width) * height, '\1'));
  return step;
}

const ModelRegistry& Models() {
  static const ModelRegistry* const models = [] {
    auto* registry = new ModelRegistry();
    HogModel model;
    model.name = kDefaultDetectorModel;
    model.weights.assign(model.DescriptorSize(), 0.5f);
    EXPECT_TRUE(registry->Add(std::move(model)).ok());
    return registry;
  }();
  return *models;
}

template <typename Request, typename Validate>
Target MakeTarget(std::string name, std::shared_ptr<Request> valid, Validate validate) {
  return Target{std::move(name), valid,
                [validate](const Message& m) { return validate(static_cast<const Request&>(m)); }};
}

std::vector<Target> Targets() {
  const RequestLimits limits;
  std::vector<Target> targets;
  {
    auto r = std::make_shared<v1::MorphologyRequest>();
    GrayImage(r->mutable_input()->mutable_image(), 9, 7, 3)->mutable_spacing()->set_x_mm(0.5);
    Step(r.get(), 3, 3);
    v1::MorphologyStep* mm = r->add_steps();
    mm->set_op(v1::MORPHOLOGY_OP_DILATE);
    mm->mutable_element()->set_shape(v1::ELEMENT_SHAPE_ELLIPSE);
    mm->mutable_element()->mutable_radius()->set_x_mm(1);
    r->mutable_output()->set_keep_resident(true);
    r->mutable_output()->set_ttl_seconds(10);
    targets.push_back(MakeTarget("Morphology", r, [limits](const v1::MorphologyRequest& m) {
      return ValidateMorphologyRequest(m, limits).status();
    }));
  }
  {
    // A resident input with an element in millimetres: completed once the object's spacing is
    // known (here one with no z spacing, which a z radius needs).
    auto r = std::make_shared<v1::MorphologyRequest>();
    r->mutable_input()->set_handle("h");
    v1::MorphologyStep* mm = r->add_steps();
    mm->set_op(v1::MORPHOLOGY_OP_ERODE);
    mm->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
    mm->mutable_element()->mutable_radius()->set_x_mm(1);
    targets.push_back(
        MakeTarget("Morphology on a resident object", r, [limits](const v1::MorphologyRequest& m) {
          absl::StatusOr<MorphologyJob> job = ValidateMorphologyRequest(m, limits);
          if (!job.ok()) return job.status();
          v1::Spacing spacing;
          spacing.set_x_mm(0.5);
          spacing.set_y_mm(0.5);
          return ResolveMorphologyOnResident(m, spacing, Extent{8, 8, 4}, limits, &*job);
        }));
  }
  {
    auto r = std::make_shared<v1::MorphologyRequest>();
    v1::SharedMemoryImage* shm = r->mutable_input()->mutable_shared_memory();
    shm->set_region("region");
    shm->set_offset(64);
    GrayImage(shm->mutable_image(), 8, 8)->clear_data();
    Step(r.get(), 1, 5);
    r->mutable_output()->mutable_shared_memory()->set_region("out");
    targets.push_back(
        MakeTarget("Morphology in shared memory", r, [limits](const v1::MorphologyRequest& m) {
          return ValidateMorphologyRequest(m, limits).status();
        }));
  }
  {
    auto r = std::make_shared<v1::GradientRequest>();
    GrayImage(r->mutable_input()->mutable_image(), 9, 7);
    r->set_kernel_length(5);
    r->set_sigma(1.5);
    r->set_magnitude(true);
    targets.push_back(MakeTarget("Gradient", r, [limits](const v1::GradientRequest& m) {
      return ValidateGradientRequest(m, limits).status();
    }));
  }
  {
    auto r = std::make_shared<v1::PyramidRequest>();
    GrayImage(r->mutable_input()->mutable_image(), 40, 30);
    r->set_levels(3);
    r->set_ratio(1.5);
    r->set_min_width(8);
    r->set_min_height(8);
    r->set_mode(v1::PYRAMID_MODE_CASCADED);
    r->set_output_type(v1::PIXEL_TYPE_U8);
    targets.push_back(MakeTarget("Pyramid", r, [limits](const v1::PyramidRequest& m) {
      return ValidatePyramidRequest(m, limits).status();
    }));
  }
  {
    auto r = std::make_shared<v1::DetectPedestriansRequest>();
    GrayImage(r->mutable_input()->mutable_image(), 70, 130);
    r->set_win_stride(16);
    r->set_padding(8);
    r->set_scale(1.2);
    r->set_max_levels(3);
    r->set_group_threshold(1);
    r->set_group_eps(0.3);
    r->set_hit_threshold(0.5);
    targets.push_back(
        MakeTarget("DetectPedestrians", r, [limits](const v1::DetectPedestriansRequest& m) {
          return ValidateDetectRequest(m, limits, Models()).status();
        }));
  }
  {
    auto r = std::make_shared<v1::DeformRequest>();
    v1::Mesh* mesh = r->mutable_mesh()->mutable_mesh();
    const float positions[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    const std::uint32_t triangles[3] = {0, 1, 2};
    mesh->set_vertex_count(3);
    mesh->set_triangle_count(1);
    mesh->set_positions(reinterpret_cast<const char*>(positions), sizeof(positions));
    mesh->set_triangles(reinterpret_cast<const char*>(triangles), sizeof(triangles));
    v1::Lattice* l = r->mutable_lattice();
    l->mutable_s()->set_x(2);
    l->mutable_t()->set_y(2);
    l->mutable_u()->set_z(2);
    l->set_count_s(2);
    l->set_count_t(2);
    l->set_count_u(2);
    for (int i = 0; i < 24; ++i) l->add_displacements(0.01 * i);
    r->set_outputs(v1::DEFORM_OUTPUTS_POSITIONS);
    targets.push_back(MakeTarget("Deform", r, [limits](const v1::DeformRequest& m) {
      return ValidateDeformRequest(m, limits).status();
    }));
  }
  {
    auto r = std::make_shared<v1::UploadRequest>();
    GrayImage(r->mutable_image(), 8, 8);
    targets.push_back(MakeTarget("Upload image", r, [limits](const v1::UploadRequest& m) {
      return ValidateUploadHeader(m.image(), limits).status();
    }));
  }
  {
    auto r = std::make_shared<v1::UploadRequest>();
    r->mutable_mesh()->set_vertex_count(3);
    r->mutable_mesh()->set_triangle_count(1);
    r->mutable_mesh()->set_positions(std::string(36, '\0'));
    r->mutable_mesh()->set_triangles(std::string(12, '\0'));
    targets.push_back(MakeTarget("Upload mesh", r, [limits](const v1::UploadRequest& m) {
      return ValidateUploadMeshHeader(m.mesh(), limits);
    }));
  }
  for (const bool morphology : {true, false}) {
    auto r = std::make_shared<v1::VolumeStreamRequest>();
    v1::VolumeStreamHeader* h = r->mutable_header();
    GrayImage(h->mutable_volume(), 8, 8, 4)->clear_data();
    h->mutable_volume()->mutable_spacing()->set_x_mm(1);
    h->mutable_volume()->mutable_spacing()->set_y_mm(1);
    if (morphology) {
      v1::MorphologyRequest m;
      Step(&m, 3, 1);
      *h->mutable_morphology() = m;
    } else {
      h->mutable_gradient()->set_kernel_length(3);
      h->mutable_gradient()->set_angle(true);
    }
    targets.push_back(
        MakeTarget(morphology ? "ProcessVolumeStream morphology" : "ProcessVolumeStream gradient",
                   r, [limits](const v1::VolumeStreamRequest& m) {
                     return ValidateVolumeStreamHeader(m.header(), limits).status();
                   }));
  }
  return targets;
}

TEST(BadRequestCorpus, EveryValidatorRefusalNamesAReasonAndAFieldOfItsRequest) {
  std::map<std::string, int> reasons;
  int refusals = 0;
  for (const Target& target : Targets()) {
    ASSERT_TRUE(target.validate(*target.valid).ok()) << target.name << ": the valid request";
    int mutations = 0;
    int refused = 0;
    Mutations(
        *target.valid, [](Message& root) -> Message& { return root; },
        [&](const Mutation& mutate) {
          std::unique_ptr<Message> request(target.valid->New());
          request->CopyFrom(*target.valid);
          mutate(*request);
          ++mutations;
          const absl::Status status = target.validate(*request);
          if (status.ok()) return;
          ++refused;
          ++reasons[ErrorReasonOf(status)];
          const std::string broken = testing::ErrorContractError(status, *request, true);
          EXPECT_EQ(broken, "") << target.name << ": " << status
                                << "\nrequest: " << request->ShortDebugString().substr(0, 400);
        });
    // Not vacuous: every request has many ways to be wrong.
    EXPECT_GT(refused, 10) << target.name << ": " << refused << " of " << mutations;
    refusals += refused;
  }
  // The walk reaches every reason a validator raises (the service's own: part 2).
  const std::set<std::string> expected = {
      "FIELD_REQUIRED",     "UNKNOWN_ENUM_VALUE",     "VALUE_OUT_OF_RANGE",      "INVALID_FORMAT",
      "DATA_SIZE_MISMATCH", "INVALID_COMBINATION",    "MESSAGE_OUT_OF_ORDER",    "LIMIT_EXCEEDED",
      "ELEMENT_TOO_LARGE",  "UNSUPPORTED_PIXEL_TYPE", "UNSUPPORTED_IMAGE_SHAPE", "MODEL_NOT_FOUND"};
  std::set<std::string> seen;
  for (const auto& [reason, count] : reasons) seen.insert(reason);
  for (const std::string& reason : expected) EXPECT_EQ(seen.count(reason), 1u) << reason;
  EXPECT_GT(refusals, 500);
  RecordProperty("refusals", refusals);
  RecordProperty("reasons", static_cast<int>(seen.size()));
}

// The walker itself: paths that do not name a field are found out.
TEST(BadRequestCorpus, FieldPathsResolveOnlyWhenTheRequestHasThem) {
  v1::MorphologyRequest r;
  Step(&r, 3, 3);
  EXPECT_EQ(testing::FieldPathError(r, "steps[0].element.width"), "");
  EXPECT_EQ(testing::FieldPathError(r, "input.source"), "");  // a oneof, as the last name
  EXPECT_EQ(testing::FieldPathError(r, "input.image.spacing.x_mm"), "");
  EXPECT_EQ(testing::FieldPathError(r, "steps"), "");
  EXPECT_NE(testing::FieldPathError(r, "steps[1].op"), "");         // one step only
  EXPECT_NE(testing::FieldPathError(r, "steps.op"), "");            // repeated: needs an index
  EXPECT_NE(testing::FieldPathError(r, "input[0]"), "");            // not repeated
  EXPECT_NE(testing::FieldPathError(r, "extent"), "");              // a kernel's word
  EXPECT_NE(testing::FieldPathError(r, "input.source.image"), "");  // a oneof is no message
  EXPECT_NE(testing::FieldPathError(r, "steps[0].op.x"), "");       // not a message
  EXPECT_NE(testing::FieldPathError(r, "steps[x]"), "");
  EXPECT_NE(testing::FieldPathError(r, ""), "");
  EXPECT_TRUE(testing::IsDocumentedReason("VALUE_OUT_OF_RANGE"));
  EXPECT_FALSE(testing::IsDocumentedReason("INVALID_ARGUMENT"));
  EXPECT_FALSE(testing::IsDocumentedReason("UNSPECIFIED"));
}

}  // namespace
}  // namespace cuimg
