#pragma once
// The topology view as JSON: what TUTTI_TOPO_DUMP_FILE writes, TUTTI_TOPO_FILE loads and
// ranks exchange through the store at creation. The format is docs/topology.md's.

#include <string>
#include <string_view>

#include "topology/view.h"
#include "tutti/status.h"

namespace tutti::topo {

/// The document's "format" member, so that another JSON file is refused by name.
inline constexpr std::string_view kViewFormat = "tutti-topology";
inline constexpr int kViewVersion = 1;

/// `view` as a JSON document: one line per host and per rank.
std::string toJson(const View& view);

/// A view from a JSON document, checked (check()). Errors are kInvalidArgument naming the
/// line and the field: "line 7: ranks[2].host: an integer expected, found a string".
Result<View> fromJson(std::string_view text);

/// fromJson of the file at `path`; errors name the file.
Result<View> loadViewFile(const std::string& path);

/// Writes toJson(view) to `path` (through a temporary file renamed over it, so a reader
/// never sees half a view); errors name the file.
Status writeViewFile(const std::string& path, const View& view);

}  // namespace tutti::topo
