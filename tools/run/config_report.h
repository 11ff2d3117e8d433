#pragma once
// `tutti-run --config`: every environment variable tutti reads (src/base/config_vars.def),
// with its default, audience, allowed values, what the environment sets it to (and whether
// the registry accepts that), and what it does.

#include <map>
#include <string>

namespace tutti::run {

/// One entry per variable, in declaration order:
///   NAME=VALUE (set; default DEFAULT)   or   NAME (default DEFAULT)
///       AUDIENCE knob: what is allowed       (or: set by a launcher)
///       REFUSED: why                         (only for a set value the registry refuses)
///       one-line description
/// TUTTI_SECRET's value is never shown, only that it is set.
/// `env` holds the environment to report (variable name -> value).
std::string describeConfig(const std::map<std::string, std::string>& env);

}  // namespace tutti::run
