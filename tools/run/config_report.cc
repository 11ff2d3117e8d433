#include "run/config_report.h"

#include <string_view>

#include "base/config.h"
#include "base/strings.h"

namespace tutti::run {

std::string describeConfig(const std::map<std::string, std::string>& env) {
  std::string out;
  for (const ConfigVarInfo& var : configRegistry()) {
    const std::string def = *var.defaultValue == '\0' ? "unset" : var.defaultValue;
    const auto it = env.find(var.name);
    // The job secret is never printed (only that it is set).
    const bool secret = std::string_view(var.name) == "TUTTI_SECRET";
    if (it != env.end() && secret)
      out += strFormat("%s (set, not shown; default %s)\n", var.name, def.c_str());
    else if (it != env.end())
      out += strFormat("%s=%s (set; default %s)\n", var.name, it->second.c_str(), def.c_str());
    else
      out += strFormat("%s (default %s)\n", var.name, def.c_str());
    if (var.audience == ConfigAudience::Launcher)
      out += "    set by a launcher\n";
    else
      out += strFormat("    %s knob: %s\n", configAudienceName(var.audience),
                       configAllowedValues(var).c_str());
    if (it != env.end() && !secret) {
      const Status valid = validateConfigValue(var.name, it->second);
      if (!valid.ok()) out += strFormat("    REFUSED: %s\n", valid.message().c_str());
    }
    out += strFormat("    %s\n", var.doc);
  }
  return out;
}

}  // namespace tutti::run
