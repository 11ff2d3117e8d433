#pragma once
// tutti-config-doc: docs/config.md and the README's table of user knobs, generated from the
// registry (src/base/config_vars.def), and the check that the checked-in copies are current.

#include <string>
#include <string_view>

#include "tutti/status.h"

namespace tutti::config_doc {

/// The README block between these markers is generated (readmeKnobTable()).
inline constexpr std::string_view kReadmeBegin = "<!-- user-knobs:begin -->";
inline constexpr std::string_view kReadmeEnd = "<!-- user-knobs:end -->";

/// What regenerates both files, for messages.
inline constexpr std::string_view kRegenerate =
    "cmake --build build --target config-doc (or: build/bin/tutti-config-doc --write .)";

/// The whole of docs/config.md: every variable, one table per audience.
std::string configMarkdown();

/// The README's block, markers included: the user knobs with default, allowed values and doc.
std::string readmeKnobTable();

/// `readme` with the text from kReadmeBegin to kReadmeEnd (both included) replaced by
/// readmeKnobTable(); `readme` itself when it has no markers; kInvalidArgument when it has
/// one marker without the other, or the end before the begin.
Result<std::string> withReadmeKnobs(const std::string& readme);

/// Checks docs/config.md and README.md under `root` (the source tree) against what this tool
/// makes. Ok when both are current (the README without markers passes); else
/// kMismatch naming each stale file and kRegenerate; kSystemError when a file
/// cannot be read.
Status checkDocs(const std::string& root);

/// Rewrites docs/config.md, and README.md's block where it has the markers, under `root`.
Status writeDocs(const std::string& root);

}  // namespace tutti::config_doc
