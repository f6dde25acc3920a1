// The client version, reported to servers inside client ids. The number itself lives
// in one place only, the project() line of CMakeLists.txt, which passes it here.
#pragma once

#ifndef TUBEMQ_VERSION
#error "TUBEMQ_VERSION must be defined by the build (see CMakeLists.txt)"
#endif

namespace tubemq {
inline constexpr const char* kVersion = TUBEMQ_VERSION;
}  // namespace tubemq
