// The response half of wire_pixels.h: results' pixels written outside the message and sent
// from their own buffers, spliced by reference between the bytes protobuf serializes.
#include <grpcpp/impl/codegen/proto_utils.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "google/protobuf/unknown_field_set.h"
#include "server/rpc/wire_format.h"
#include "server/rpc/wire_pixels.h"

namespace cuimg {
namespace {

using google::protobuf::FieldDescriptor;
using wire_format::AppendVarint;
using wire_format::LengthTag;

// Where a result's pixels are: ImageResult.image (1), Image.data (6).
constexpr std::uint32_t kResultImageField = 1;
constexpr std::uint32_t kImageDataField = 6;

void DeleteSharedBuffer(void* owner) { delete static_cast<std::shared_ptr<HostBuffer>*>(owner); }

// A message's bytes with pixels spliced in by reference: runs of bytes and pixel ranges, in
// order, and their total size (which the enclosing field's length needs before its bytes).
class Spliced {
 public:
  using Pixels = DetachedResults::Pixels;

  std::size_t size() const { return size_; }

  void Bytes(absl::string_view bytes) {
    if (bytes.empty()) return;
    LastBytes().append(bytes.data(), bytes.size());
    size_ += bytes.size();
  }
  void Varint(std::uint64_t value) {
    std::string& last = LastBytes();
    const std::size_t before = last.size();
    AppendVarint(value, &last);
    size_ += last.size() - before;
  }
  void Splice(const Pixels& pixels) {
    if (pixels.bytes == 0) return;
    pieces_.push_back(Piece{{}, pixels});
    size_ += pixels.bytes;
  }
  // `message` (which holds nothing detached) as the value of length-delimited field `number`,
  // serialized straight into the bytes.
  void MessageField(std::uint64_t number, const google::protobuf::Message& message) {
    Varint(LengthTag(number));
    const std::size_t bytes = message.ByteSizeLong();  // caches the sizes the write below uses
    Varint(bytes);
    std::string& last = LastBytes();
    const std::size_t at = last.size();
    last.resize(at + bytes);
    message.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(&last[at]));
    size_ += bytes;
  }
  // `pixels` as the value of length-delimited field `number`.
  void PixelsField(std::uint64_t number, const Pixels& pixels) {
    Varint(LengthTag(number));
    Varint(pixels.bytes);
    Splice(pixels);
  }
  // `inner` as the value of length-delimited field `number`; its pieces are moved here (a
  // message several levels deep would otherwise have its bytes copied once per level).
  void Field(std::uint64_t number, Spliced&& inner) {
    Varint(LengthTag(number));
    Varint(inner.size());
    for (Piece& p : inner.pieces_) {
      if (p.pixels.buffer != nullptr) {
        Splice(p.pixels);
      } else if (pieces_.back().pixels.buffer == nullptr) {
        Bytes(p.bytes);  // joins the tag and length written above
      } else {
        size_ += p.bytes.size();
        pieces_.push_back(std::move(p));
      }
    }
  }

  // Each slice of pixels keeps its buffer alive until gRPC has sent it.
  std::vector<grpc::Slice> Slices() const {
    std::vector<grpc::Slice> slices;
    slices.reserve(pieces_.size());
    for (const Piece& p : pieces_) {
      if (p.pixels.buffer == nullptr) {
        slices.emplace_back(p.bytes);
        continue;
      }
      auto* owner = new std::shared_ptr<HostBuffer>(p.pixels.buffer);
      slices.emplace_back(static_cast<char*>(p.pixels.buffer->data()) + p.pixels.offset,
                          p.pixels.bytes, &DeleteSharedBuffer, owner);
    }
    return slices;
  }

 private:
  struct Piece {
    std::string bytes;
    Pixels pixels;
  };
  // The last piece when it holds bytes, else a new one.
  std::string& LastBytes() {
    if (pieces_.empty() || pieces_.back().pixels.buffer != nullptr) pieces_.emplace_back();
    return pieces_.back().bytes;
  }

  std::vector<Piece> pieces_;
  std::size_t size_ = 0;
};

// Copies field `f` of `from` into `to` (a message of the same type), whatever its type.
void CopyField(const google::protobuf::Message& from, const FieldDescriptor* f,
               google::protobuf::Message* to) {
  const google::protobuf::Reflection* r = from.GetReflection();
  const google::protobuf::Reflection* w = to->GetReflection();
  if (!f->is_repeated()) {
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return w->SetInt32(to, f, r->GetInt32(from, f));
      case FieldDescriptor::CPPTYPE_INT64:
        return w->SetInt64(to, f, r->GetInt64(from, f));
      case FieldDescriptor::CPPTYPE_UINT32:
        return w->SetUInt32(to, f, r->GetUInt32(from, f));
      case FieldDescriptor::CPPTYPE_UINT64:
        return w->SetUInt64(to, f, r->GetUInt64(from, f));
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return w->SetDouble(to, f, r->GetDouble(from, f));
      case FieldDescriptor::CPPTYPE_FLOAT:
        return w->SetFloat(to, f, r->GetFloat(from, f));
      case FieldDescriptor::CPPTYPE_BOOL:
        return w->SetBool(to, f, r->GetBool(from, f));
      case FieldDescriptor::CPPTYPE_ENUM:
        return w->SetEnumValue(to, f, r->GetEnumValue(from, f));
      case FieldDescriptor::CPPTYPE_STRING:
        return w->SetString(to, f, r->GetString(from, f));
      case FieldDescriptor::CPPTYPE_MESSAGE:
        return w->MutableMessage(to, f)->CopyFrom(r->GetMessage(from, f));
    }
    return;
  }
  for (int i = 0; i < r->FieldSize(from, f); ++i) {
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        w->AddInt32(to, f, r->GetRepeatedInt32(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        w->AddInt64(to, f, r->GetRepeatedInt64(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        w->AddUInt32(to, f, r->GetRepeatedUInt32(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        w->AddUInt64(to, f, r->GetRepeatedUInt64(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        w->AddDouble(to, f, r->GetRepeatedDouble(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        w->AddFloat(to, f, r->GetRepeatedFloat(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        w->AddBool(to, f, r->GetRepeatedBool(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        w->AddEnumValue(to, f, r->GetRepeatedEnumValue(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        w->AddString(to, f, r->GetRepeatedString(from, f, i));
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        w->AddMessage(to, f)->CopyFrom(r->GetRepeatedMessage(from, f, i));
        break;
    }
  }
}

// Writes a message whose subtree holds detached results: the fields that lead to a result are
// written here, one by one; messages below that cannot hold one (their type cannot: MayHold) as
// protobuf serializes them, in place; the other fields copied into one message and serialized
// after them.
class ResultSplicer {
 public:
  using Results = std::unordered_map<const google::protobuf::Message*, Spliced::Pixels>;
  using Field = std::pair<int, Spliced::Pixels>;  // a bytes field's number, its pixels
  using Fields = std::unordered_map<const google::protobuf::Message*, std::vector<Field>>;

  ResultSplicer(const Results& results, const Fields& fields)
      : results_(results), fields_(fields) {}

  // Results and bytes fields written so far.
  std::size_t found() const { return found_; }

  absl::Status Write(const google::protobuf::Message& m, Spliced* out) {
    if (may_hold_.empty()) FindTypesThatMayHold(m.GetDescriptor());
    return WriteMessage(m, out);
  }

 private:
  absl::Status WriteMessage(const google::protobuf::Message& m, Spliced* out) {
    if (const auto it = results_.find(&m); it != results_.end()) {
      ++found_;
      return WriteResult(m, it->second, out);
    }
    const google::protobuf::Reflection* reflection = m.GetReflection();
    std::vector<const FieldDescriptor*> detached_bytes;
    if (const auto it = fields_.find(&m); it != fields_.end()) {
      for (const auto& [number, pixels] : it->second) {
        const FieldDescriptor* f = m.GetDescriptor()->FindFieldByNumber(number);
        if (f == nullptr || f->is_repeated() || f->type() != FieldDescriptor::TYPE_BYTES ||
            !reflection->GetString(m, f).empty()) {
          return absl::InternalError(absl::StrCat("detached field ", number, " of ",
                                                  m.GetTypeName(),
                                                  " is not an empty singular bytes field"));
        }
        CUIMG_RETURN_IF_ERROR(CheckInside(pixels));
        ++found_;
        out->PixelsField(static_cast<std::uint64_t>(number), pixels);
        detached_bytes.push_back(f);
      }
    }
    std::vector<const FieldDescriptor*> fields;
    reflection->ListFields(m, &fields);
    // The fields that are not messages, copied one by one and serialized by protobuf: copying
    // the whole message and clearing the others would copy a batch's every entry.
    std::unique_ptr<google::protobuf::Message> rest;
    for (const FieldDescriptor* f : fields) {
      if (f->type() != FieldDescriptor::TYPE_MESSAGE) {
        if (std::find(detached_bytes.begin(), detached_bytes.end(), f) != detached_bytes.end()) {
          continue;  // its pixels are written above
        }
        if (rest == nullptr) rest.reset(m.New());
        CopyField(m, f, rest.get());
        continue;
      }
      const bool may_hold = MayHold(f->message_type());
      const auto number = static_cast<std::uint64_t>(f->number());
      const int count = f->is_repeated() ? reflection->FieldSize(m, f) : 1;
      for (int i = 0; i < count; ++i) {
        const google::protobuf::Message& sub = f->is_repeated()
                                                   ? reflection->GetRepeatedMessage(m, f, i)
                                                   : reflection->GetMessage(m, f);
        if (!may_hold) {
          out->MessageField(number, sub);
          continue;
        }
        Spliced inner;
        CUIMG_RETURN_IF_ERROR(WriteMessage(sub, &inner));
        out->Field(number, std::move(inner));
      }
    }
    // Unknown fields too, as a copy of the whole message would keep them.
    if (!reflection->GetUnknownFields(m).empty()) {
      if (rest == nullptr) rest.reset(m.New());
      rest->GetReflection()
          ->MutableUnknownFields(rest.get())
          ->MergeFrom(reflection->GetUnknownFields(m));
    }
    if (rest != nullptr) out->Bytes(rest->SerializeAsString());
    return absl::OkStatus();
  }

  // An ImageResult: its image with the pixels as the data, then its other fields.
  absl::Status WriteResult(const google::protobuf::Message& m, const Spliced::Pixels& pixels,
                           Spliced* out) {
    if (m.GetDescriptor() != v1::ImageResult::descriptor()) {
      return absl::InternalError("a detached result is not an ImageResult");
    }
    const auto& result = static_cast<const v1::ImageResult&>(m);
    if (!result.image().data().empty()) {
      return absl::InternalError("a detached result's image already holds data");
    }
    CUIMG_RETURN_IF_ERROR(CheckInside(pixels));
    Spliced image;
    image.Bytes(result.image().SerializeAsString());
    image.PixelsField(kImageDataField, pixels);
    out->Field(kResultImageField, std::move(image));
    // Its other fields (the handle), as protobuf writes them.
    std::vector<const FieldDescriptor*> fields;
    result.GetReflection()->ListFields(result, &fields);
    const auto& unknown = result.GetReflection()->GetUnknownFields(result);
    if (fields.size() <= 1 && unknown.empty()) return absl::OkStatus();  // the image alone
    v1::ImageResult others;
    for (const FieldDescriptor* f : fields) {
      if (f->number() != static_cast<int>(kResultImageField)) CopyField(result, f, &others);
    }
    others.GetReflection()->MutableUnknownFields(&others)->MergeFrom(unknown);
    out->Bytes(others.SerializeAsString());
    return absl::OkStatus();
  }

  static absl::Status CheckInside(const Spliced::Pixels& pixels) {
    if (pixels.buffer == nullptr || pixels.offset > pixels.buffer->size() ||
        pixels.bytes > pixels.buffer->size() - pixels.offset) {
      return absl::InternalError("detached pixels lie outside their buffer");
    }
    return absl::OkStatus();
  }

  // The message types reachable from `root` that may hold something detached: ImageResult, the
  // types of the messages with detached bytes fields, and every type with a message field of
  // such a type (to a fixed point: types may nest themselves, as a batch entry's response does).
  // A message of any other type is written whole; one of these field by field.
  void FindTypesThatMayHold(const google::protobuf::Descriptor* root) {
    std::vector<const google::protobuf::Descriptor*> types{root};
    may_hold_[root] = false;
    for (std::size_t i = 0; i < types.size(); ++i) {
      for (int k = 0; k < types[i]->field_count(); ++k) {
        const google::protobuf::Descriptor* sub = types[i]->field(k)->message_type();
        if (sub != nullptr && may_hold_.emplace(sub, false).second) types.push_back(sub);
      }
    }
    if (const auto it = may_hold_.find(v1::ImageResult::descriptor()); it != may_hold_.end()) {
      it->second = true;
    }
    for (const auto& [message, list] : fields_) may_hold_[message->GetDescriptor()] = true;
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& [type, holds] : may_hold_) {
        for (int k = 0; k < type->field_count() && !holds; ++k) {
          const google::protobuf::Descriptor* sub = type->field(k)->message_type();
          const auto it = sub == nullptr ? may_hold_.end() : may_hold_.find(sub);
          holds = it != may_hold_.end() && it->second;
          changed = changed || holds;
        }
      }
    }
  }

  bool MayHold(const google::protobuf::Descriptor* type) const {
    const auto it = may_hold_.find(type);
    return it == may_hold_.end() || it->second;  // (every type below the root is there)
  }

  const Results& results_;
  const Fields& fields_;
  std::unordered_map<const google::protobuf::Descriptor*, bool> may_hold_;
  std::size_t found_ = 0;
};

}  // namespace

void* DetachedResults::Add(const v1::ImageResult* result, std::size_t bytes) {
  std::shared_ptr<HostBuffer> buffer = allocate_(bytes);
  void* data = buffer->data();
  Attach(result, std::move(buffer), 0, bytes);
  return data;
}

void DetachedResults::Attach(const v1::ImageResult* result, std::shared_ptr<HostBuffer> buffer,
                             std::size_t offset, std::size_t bytes) {
  results_[result] = Pixels{std::move(buffer), offset, bytes};
}

void* DetachedResults::TakeRequestPixels(const v1::ImageResult* result, const void* input,
                                         std::size_t bytes) {
  if (request_pixels_ == nullptr || input == nullptr || input != request_pixels_->data() ||
      bytes != request_pixels_->size()) {
    return nullptr;
  }
  void* data = request_pixels_->data();
  Attach(result, std::move(request_pixels_), 0, bytes);
  request_pixels_ = nullptr;
  return data;
}

void* DetachedResults::AddBytes(const google::protobuf::Message* message, int field,
                                std::size_t bytes) {
  std::shared_ptr<HostBuffer> buffer = allocate_(bytes);
  void* data = buffer->data();
  fields_[message].emplace_back(field, Pixels{std::move(buffer), 0, bytes});
  return data;
}

void DetachedResults::Discard(const google::protobuf::Message& message) {
  std::vector<const google::protobuf::Message*> pending{&message};
  std::vector<const FieldDescriptor*> fields;
  while (!pending.empty()) {
    const google::protobuf::Message* m = pending.back();
    pending.pop_back();
    results_.erase(m);
    fields_.erase(m);
    const google::protobuf::Reflection* reflection = m->GetReflection();
    fields.clear();
    reflection->ListFields(*m, &fields);
    for (const FieldDescriptor* f : fields) {
      if (f->type() != FieldDescriptor::TYPE_MESSAGE) continue;
      if (!f->is_repeated()) {
        pending.push_back(&reflection->GetMessage(*m, f));
        continue;
      }
      for (int i = 0; i < reflection->FieldSize(*m, f); ++i) {
        pending.push_back(&reflection->GetRepeatedMessage(*m, f, i));
      }
    }
  }
}

absl::Status DetachedResults::Serialize(const google::protobuf::Message& response,
                                        grpc::ByteBuffer* wire) {
  const ResultSplicer::Results results = std::move(results_);
  const ResultSplicer::Fields fields = std::move(fields_);
  results_.clear();
  fields_.clear();
  if (results.empty() && fields.empty()) {
    // Nothing detached (resident outputs, JPEG-in detections): as gRPC's generated code would.
    bool own_buffer = false;
    const grpc::Status status = grpc::SerializationTraits<google::protobuf::Message>::Serialize(
        response, wire, &own_buffer);
    if (!status.ok()) {
      return absl::InternalError(
          absl::StrCat("serializing the ", response.GetTypeName(), ": ", status.error_message()));
    }
    return absl::OkStatus();
  }
  std::size_t added = results.size();
  for (const auto& [message, list] : fields) added += list.size();
  Spliced out;
  ResultSplicer splicer(results, fields);
  CUIMG_RETURN_IF_ERROR(splicer.Write(response, &out));
  if (splicer.found() != added) {
    return absl::InternalError(
        absl::StrCat("a detached result or field is not in the ", response.GetTypeName()));
  }
  const std::vector<grpc::Slice> slices = out.Slices();
  *wire = grpc::ByteBuffer(slices.data(), slices.size());
  return absl::OkStatus();
}

}  // namespace cuimg
