// tutti-info: what tutti sees and knows, with no job running.
//   tutti-info topology [--file F] [--json]   the view of this host, or of a dump file
//   tutti-info config                         every knob (as tutti-run --config)
//   tutti-info algorithms [--ranks N] [--hosts H]
//   tutti-info explain COLLECTIVE SIZE --ranks N [--hosts H] [--topo F] [--model F] ...
// This file is the command line only; info/reports.h and run/config_report.h do the work.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <string>

#include "info/explain.h"
#include "info/reports.h"
#include "run/config_report.h"
#include "topology/host_identity.h"
#include "topology/view_json.h"

extern char** environ;  // NOLINT: POSIX

namespace {

constexpr int kUsageExitCode = 2;

int fail(const std::string& message) {
  std::fprintf(stderr, "tutti-info: %s\n", message.c_str());
  return 1;
}

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string text = *e;
    const auto eq = text.find('=');
    if (eq != std::string::npos) env.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return env;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tutti-info: the topology tutti sees, its knobs and its algorithms"};
  app.require_subcommand(1);

  CLI::App* topology = app.add_subcommand(
      "topology", "the topology view: this host's as one rank would describe it, or a file's");
  std::string file;
  bool json = false;
  topology->add_option("--file", file,
                       "a view written by TUTTI_TOPO_DUMP_FILE (or for TUTTI_TOPO_FILE)");
  topology->add_flag("--json", json, "print the view as JSON (docs/topology.md)");

  app.add_subcommand("config", "every environment variable tutti reads, with its value here");

  CLI::App* algorithms = app.add_subcommand(
      "algorithms", "each collective's algorithms, and which apply to a communicator");
  int ranks = 0;
  int hosts = 1;
  algorithms->add_option("--ranks", ranks, "mark the algorithms that apply to this many ranks")
      ->check(CLI::Range(1, 1 << 20));
  algorithms->add_option("--hosts", hosts, "spread the ranks over this many hosts (1)")
      ->check(CLI::Range(1, 1 << 20));

  CLI::App* explain = app.add_subcommand(
      "explain", "the tuner's ranking of every algorithm (and segment) for one call, with "
                 "predicted times, without running anything");
  tutti::info::ExplainRequest request;
  explain->add_option("collective", request.collective, "allreduce, broadcast, ...")->required();
  explain->add_option("size", request.size, "bytes per rank (K/M/G suffixes)")->required();
  explain->add_option("--ranks", request.ranks, "ranks of the communicator")
      ->check(CLI::Range(1, 1 << 24));
  explain->add_option("--hosts", request.hosts, "hosts the ranks are split over (1)")
      ->check(CLI::Range(1, 1 << 24));
  explain->add_option("--topo", request.topoFile,
                      "a topology file (TUTTI_TOPO_DUMP_FILE): its hosts, repeated --hosts times");
  explain->add_option("--model", request.modelFile,
                      "a machine model file (default: this host's, cached or probed)");
  explain->add_option("--net", request.network, "flat, fat-tree:..., rail:... or a file (flat)");
  explain->add_option("--transport", request.transport,
                      "shm, tcp or hybrid (shm on one host, hybrid across hosts)");
  explain->add_option("--dtype", request.dtype, "data type (float32)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kUsageExitCode;
  }

  if (topology->parsed()) {
    tutti::topo::View view;
    if (!file.empty()) {
      auto loaded = tutti::topo::loadViewFile(file);
      if (!loaded.ok()) return fail(loaded.status().message());
      view = std::move(loaded).value();
    } else {
      view = tutti::topo::describeThisRank(tutti::topo::hostIdentity(), "");
    }
    std::fputs((json ? tutti::topo::toJson(view) : tutti::info::describeView(view)).c_str(), stdout);
    return 0;
  }
  if (explain->parsed()) {
    auto text = tutti::info::explainCall(request);
    if (!text.ok()) return fail(text.status().message());
    std::fputs(text->c_str(), stdout);
    return 0;
  }
  if (app.got_subcommand("config")) {
    std::fputs(tutti::run::describeConfig(environment()).c_str(), stdout);
    return 0;
  }
  if (algorithms->count("--hosts") > 0 && ranks == 0)
    return fail("--hosts needs --ranks");
  auto text = tutti::info::describeAlgorithms(ranks, hosts);
  if (!text.ok()) return fail(text.status().message());
  std::fputs(text->c_str(), stdout);
  return 0;
}
