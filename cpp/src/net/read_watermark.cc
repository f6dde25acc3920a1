#include "net/read_watermark.h"

#include <algorithm>
#include <cstdio>

#ifdef __linux__
#include <sys/utsname.h>
#endif

namespace tubemq::net::read_watermark {

size_t For(size_t pending) {
  if (pending < kDeepPipeline) return 1;
  return std::min(pending / 4, kMaxRepliesWaitedFor) * kMinReplyFrameBytes;
}

bool Supported() {
#ifdef __linux__
  // Read once: the running kernel does not change under the process.
  static const bool supported = [] {
    utsname name{};
    int major = 0;
    int minor = 0;
    if (uname(&name) != 0 || std::sscanf(name.release, "%d.%d", &major, &minor) != 2) {
      return false;
    }
    return major > 4 || (major == 4 && minor >= 18);
  }();
  return supported;
#else
  return false;
#endif
}

}  // namespace tubemq::net::read_watermark
