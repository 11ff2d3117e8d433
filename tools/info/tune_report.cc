// The machine model in words (tune_report.h).
#include "info/tune_report.h"

#include "base/strings.h"

namespace tutti::info {
namespace {

// Bytes per second from seconds per byte, in GB/s (10^9); "-" for none.
std::string rate(double secondsPerByte) {
  return secondsPerByte > 0 ? strFormat("%.2f GB/s", 1e-9 / secondsPerByte) : std::string("-");
}

std::string micro(double seconds) { return strFormat("%.3f us", seconds * 1e6); }

}  // namespace

std::string describeModel(const tuning::MachineModel& m, const std::vector<std::string>& notes) {
  std::string out = strFormat("machine model (%s)\n\n", m.origin.c_str());
  out += strFormat("  %-12s %12s %14s %12s\n", "path", "latency", "bandwidth", "overhead");
  for (int c = 0; c < tuning::kNumPathClasses; ++c) {
    const tuning::LinkCost& l = m.paths[static_cast<std::size_t>(c)];
    out += strFormat("  %-12s %12s %14s %12s\n",
                     tuning::pathClassName(static_cast<tuning::PathClass>(c)),
                     micro(l.alpha).c_str(), rate(l.beta).c_str(), micro(l.overhead).c_str());
  }
  out += strFormat("  %-12s %12s %14s %12s\n", "tcp loopback", micro(m.loopback.alpha).c_str(),
                   rate(m.loopback.beta).c_str(), micro(m.loopback.overhead).c_str());
  out += strFormat("\n  per message end     %s (the library's own)\n", micro(m.messageOverhead).c_str());
  out += strFormat("  context switch      %s\n", micro(m.switchCost).c_str());
  out += strFormat("  yield hand-over     %s\n", micro(m.yieldCost).c_str());
  out += strFormat("  kernel copy         %s\n",
                   m.kernelCopyRatio > 0 ? strFormat("%.2fx memcpy's time", m.kernelCopyRatio).c_str()
                                         : "not known");
  out += "\n  reduction (sum), one operand into another:\n";
  for (int t = 0; t < kNumDataTypes; ++t)
    out += strFormat("    %-9s %s\n", dataTypeName(static_cast<DataType>(t)),
                     rate(m.gamma[static_cast<std::size_t>(t)]).c_str());
  out += strFormat("\n  local copy          %s\n", rate(m.copyBeta).c_str());
  out += strFormat("  host memory         %s\n",
                   m.hostMemoryBandwidth > 0 ? rate(1 / m.hostMemoryBandwidth).c_str() : "no limit");
  out += strFormat("  host caches         %s (last level %s)\n",
                   m.cacheBandwidth > 0 ? rate(1 / m.cacheBandwidth).c_str() : "as memory",
                   m.llcBytes > 0 ? strFormat("%.1f MiB", static_cast<double>(m.llcBytes) / (1 << 20)).c_str()
                                  : "not known");
  out += strFormat("  NIC                 %s\n",
                   m.nicBandwidth > 0 ? strFormat("%s (%.0f Mbit/s)", rate(1 / m.nicBandwidth).c_str(),
                                                  m.nicBandwidth * 8 / 1e6).c_str()
                                      : "the network path's bandwidth");
  if (m.nicBurstBytes > 0)
    out += strFormat("  NIC bucket          %.0f KiB at %s\n", static_cast<double>(m.nicBurstBytes) / 1024,
                     m.nicLineBandwidth > 0 ? strFormat("%.0f Mbit/s", m.nicLineBandwidth * 8 / 1e6).c_str()
                                            : "no limit");
  out += strFormat("  cores per host      %d\n", m.coresPerHost);
  out += strFormat("  flat exchange       %s a round + %s read\n", micro(m.flatAlpha).c_str(),
                   rate(m.flatBeta).c_str());
  if (!notes.empty()) {
    out += "\n  how each was found:\n";
    for (const std::string& note : notes) out += "    " + note + "\n";
  }
  return out;
}

}  // namespace tutti::info
