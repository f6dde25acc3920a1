// Bytes from the network as Python text. Nothing guarantees they are UTF-8: producers in
// C++, Go or old Java put GBK or arbitrary bytes into attributes and msgType, and servers
// may put such bytes into error texts. pybind11's std::string -> str conversion is
// strict and would raise UnicodeDecodeError on first access, so every such string goes
// through one of the two conversions here instead (docs/consumers.md, docs/errors.md).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

namespace tubemq::bindings {

namespace detail {
inline pybind11::str Decode(std::string_view bytes, const char* errors) {
  PyObject* text =
      PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), errors);
  if (text == nullptr) throw pybind11::error_already_set();  // only out of memory
  return pybind11::reinterpret_steal<pybind11::str>(text);
}
}  // namespace detail

// Data and names (attributes, msgType, topics, partition keys): UTF-8, with each byte
// that is not part of valid UTF-8 kept as a lone surrogate U+DC80..U+DCFF (PEP 383,
// "surrogateescape"). Lossless: text.encode("utf-8", "surrogateescape") is the bytes.
// UTF-8 input costs exactly a strict decode: CPython looks at the error handler only
// once it meets a bad byte.
inline pybind11::str WireText(std::string_view bytes) {
  return detail::Decode(bytes, "surrogateescape");
}
// The same as a new reference, or NULL with a Python error set (out of memory), for
// code that builds objects with the C API.
inline PyObject* NewWireText(std::string_view bytes) {
  return PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()),
                              "surrogateescape");
}

// A getter for a std::string member that holds such a name (.def_property_readonly).
template <typename Owner>
auto TextMember(std::string Owner::*member) {
  return [member](const Owner& self) { return WireText(self.*member); };
}

// Diagnostics (error messages, log records): bad bytes shown as \xNN escapes
// ("backslashreplace"), so the text prints anywhere; not reversible.
inline pybind11::str DiagnosticText(std::string_view bytes) {
  return detail::Decode(bytes, "backslashreplace");
}

// An argument that hands back a name the server gave (a partition key, a confirm
// context): str in WireText's form, or bytes. Converting it back with the default
// std::string caster would refuse the surrogates WireText may have made.
struct WireString {
  std::string bytes;
};

}  // namespace tubemq::bindings

namespace pybind11::detail {

template <>
struct type_caster<tubemq::bindings::WireString> {
  PYBIND11_TYPE_CASTER(tubemq::bindings::WireString, const_name("str"));

  bool load(handle source, bool /*convert*/) {
    PyObject* raw = source.ptr();
    if (PyBytes_Check(raw)) {
      value.bytes.assign(PyBytes_AS_STRING(raw),
                         static_cast<size_t>(PyBytes_GET_SIZE(raw)));
      return true;
    }
    if (!PyUnicode_Check(raw)) return false;
    Py_ssize_t size = 0;
    if (const char* utf8 = PyUnicode_AsUTF8AndSize(raw, &size)) {  // the usual case
      value.bytes.assign(utf8, static_cast<size_t>(size));
      return true;
    }
    PyErr_Clear();  // lone surrogates: undo WireText's escapes
    auto encoded = reinterpret_steal<object>(
        PyUnicode_AsEncodedString(raw, "utf-8", "surrogateescape"));
    if (!encoded) {
      PyErr_Clear();  // surrogates WireText never makes: not a name we gave out
      return false;
    }
    value.bytes.assign(PyBytes_AS_STRING(encoded.ptr()),
                       static_cast<size_t>(PyBytes_GET_SIZE(encoded.ptr())));
    return true;
  }

  static handle cast(const tubemq::bindings::WireString& source, return_value_policy,
                     handle) {
    return tubemq::bindings::WireText(source.bytes).release();
  }
};

}  // namespace pybind11::detail
