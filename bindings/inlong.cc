// tubemq._core's InLongMsg functions (use tubemq.inlong). Decoding returns the block
// layout rather than bytes objects per record, so that the facade can hand out
// memoryviews into the caller's buffer and the decompressed blocks: no record is copied.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "tubemq/inlong_msg.h"

namespace py = pybind11;

namespace tubemq::bindings {
namespace {

std::string_view View(const py::buffer_info& info) {
  return std::string_view(static_cast<const char*>(info.ptr),
                          static_cast<size_t>(info.size * info.itemsize));
}

py::buffer_info Contiguous(const py::buffer& data) {
  py::buffer_info info = data.request();
  if (info.ndim > 1 && !PyBuffer_IsContiguous(info.view(), 'C')) {
    throw py::value_error("the pack must be a contiguous buffer");
  }
  return info;
}

py::dict AttrDict(const inlong::Attributes& attrs) {
  py::dict out;
  for (const auto& [key, value] : attrs) out[py::str(key)] = py::str(value);
  return out;
}

template <typename T>
py::object Optional(const std::optional<T>& value) {
  return value ? py::cast(*value) : py::none();
}

}  // namespace

void RegisterInLong(py::module_& module) {
  module.def(
      "inlong_is_pack",
      [](const py::buffer& data) { return inlong::IsInLongMsg(View(Contiguous(data))); },
      py::arg("data"), "Whether data has InLongMsg's 0F vv ... 0F vv frame.");
  module.def(
      "inlong_decode",
      [](const py::buffer& data, size_t max_decompressed) -> py::tuple {
        const py::buffer_info info = Contiguous(data);
        inlong::DecodeOptions options;
        options.max_decompressed = max_decompressed;
        inlong::Pack pack;
        inlong::DecodeError error;
        if (!inlong::Decode(View(info), options, pack, error)) {
          return py::make_tuple(false, py::make_tuple(inlong::ErrorKindName(error.kind),
                                                      error.offset, py::str(error.message)));
        }
        py::list blocks;
        for (const auto& block : pack.blocks) blocks.append(py::bytes(block));
        py::list records;
        for (const auto& record : pack.records) {
          records.append(py::make_tuple(record.block, record.offset, record.length,
                                        AttrDict(record.attrs), Optional(record.raw_attr)));
        }
        py::object v4 = py::none();
        if (pack.version == 4) {
          py::dict fields;
          fields["msg_type"] = pack.msg_type;
          fields["ext_field"] = pack.ext_field;
          fields["group_id_num"] = pack.group_id_num;
          fields["stream_id_num"] = pack.stream_id_num;
          fields["unique_id"] = pack.unique_id;
          fields["data_time_s"] = pack.data_time_s;
          fields["common_attr_raw"] = py::str(pack.common_attr_raw);
          fields["compressed"] = pack.compressed;
          v4 = fields;
        }
        return py::make_tuple(true, py::make_tuple(pack.version, Optional(pack.create_time_ms),
                                                   Optional(pack.msg_count), blocks, records,
                                                   v4));
      },
      py::arg("data"), py::arg("max_decompressed"),
      "(True, (version, create_time_ms, msg_count, blocks, records, v4)) or "
      "(False, (kind, offset, message)); records are (block, offset, length, attrs, raw_attr).");
  module.def(
      "inlong_encode",
      [](const std::vector<std::pair<py::buffer, std::string>>& records, int version,
         bool compress, int64_t create_time_ms, const std::string& pack_attr,
         uint16_t group_id_num, uint16_t stream_id_num, uint16_t ext_field,
         uint32_t unique_id) {
        // The buffer requests live until the pack is built: the records point into them.
        std::vector<py::buffer_info> infos;
        infos.reserve(records.size());
        std::vector<inlong::EncodeRecord> items;
        items.reserve(records.size());
        for (const auto& [body, attr] : records) {
          infos.push_back(Contiguous(body));
          items.push_back(inlong::EncodeRecord{View(infos.back()), attr});
        }
        inlong::EncodeOptions options;
        options.version = version;
        options.compress = compress;
        options.create_time_ms = create_time_ms;
        options.pack_attr = pack_attr;
        options.group_id_num = group_id_num;
        options.stream_id_num = stream_id_num;
        options.ext_field = ext_field;
        options.unique_id = unique_id;
        std::string out;
        std::string error;
        if (!inlong::Encode(items, options, out, error)) throw py::value_error(error);
        return py::bytes(out);
      },
      py::arg("records"), py::arg("version"), py::arg("compress"), py::arg("create_time_ms"),
      py::arg("pack_attr"), py::arg("group_id_num"), py::arg("stream_id_num"),
      py::arg("ext_field"), py::arg("unique_id"),
      "Builds an InLongMsg pack from (body, attribute string) pairs.");
}

}  // namespace tubemq::bindings
