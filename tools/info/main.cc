// tutti-info: what tutti sees and knows, with no job running.
//   tutti-info topology [--file F] [--json]   the view of this host, or of a dump file
//   tutti-info config                         every knob (as tutti-run --config)
//   tutti-info algorithms [--ranks N] [--hosts H]
//   tutti-info explain COLLECTIVE SIZE --ranks N [--hosts H] [--topo F] [--model F] ...
//   tutti-info tune [--probe [--save]] [--json]  the machine model: stored, or measured now
// This file is the command line only; info/reports.h and run/config_report.h do the work.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "info/explain.h"
#include "info/reports.h"
#include "info/tune_report.h"
#include "base/strings.h"
#include "run/config_report.h"
#include "topology/host_identity.h"
#include "topology/view_json.h"
#include "tuning/model_cache.h"
#include "tuning/model_json.h"
#include "tutti/build_config.h"

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

// `tutti-info tune`: the model this host's communicators would use (TUTTI_TUNING_FILE, or
// the cache), or one measured now (--probe, which writes nothing unless --save: then it
// replaces this host's cache, where the probe was complete).
int tune(bool probe, bool save, bool json, double budgetMs) {
  const auto& config = tutti::Config::fromProcessEnvironment();
  if (!config.ok()) return fail(config.status().message());
  const std::string hostId = tutti::topo::hostIdentity();  // as communicators key the cache
  tutti::tuning::MachineModel model;
  std::vector<std::string> notes;
  if (probe) {
    tutti::tuning::ProbeReport report = tutti::tuning::probeHost({.budgetSeconds = budgetMs / 1e3});
    std::string cached = "not cached";
    if (save) {
      auto saved = tutti::tuning::saveHostModel(tutti::tuning::sourceFor(*config, hostId), report);
      if (!saved.ok()) {
        // The figures and why, then the failure: a busy host is told to try again.
        std::fputs(tutti::info::describeModel(report.model, report.notes).c_str(), stderr);
        return fail("--save: " + saved.status().message());
      }
      cached = "saved in " + *saved;
    } else if (!report.complete) {
      cached = "incomplete, not cacheable";
    }
    model = std::move(report.model);
    model.origin = tutti::strFormat("probe, %.0f ms; %s", report.seconds * 1e3, cached.c_str());
    notes = std::move(report.notes);
  } else {
    const tutti::tuning::ModelSource source = tutti::tuning::sourceFor(*config, hostId);
    auto stored = tutti::tuning::storedHostModel(source);
    if (!stored.ok()) return fail(stored.status().message());
    if (stored->has_value()) {
      model = std::move(**stored);
    } else {
      model = tutti::tuning::defaults();
      model.origin = source.cacheDir.empty()
                         ? "defaults: no cache directory; a communicator would probe"
                         : "defaults: nothing cached for this host in " + source.cacheDir +
                               "; the first communicator here will probe";
    }
  }
  if (json) {
    std::fputs(tutti::tuning::toJson(model, {TUTTI_VERSION_STRING, hostId}).c_str(), stdout);
  } else {
    std::fputs(tutti::info::describeModel(model, notes).c_str(), stdout);
  }
  return 0;
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
  explain->add_option("size", request.size,
                      "bytes (K/M/G suffixes) as tutti-bench's sizes: the larger of a rank's "
                      "input and output")
      ->required();
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
  std::string explainSegment;
  explain->add_option("--segment", explainSegment,
                      "the communicator's segment, K/M suffixes (512K; on one host over shared "
                      "memory a communicator may use less: TUNE logs it at creation)");
  explain->add_flag("--fixed-segment", request.fixedSegment,
                    "the segment was set by TUTTI_SEGMENT_BYTES: every algorithm runs with it "
                    "and no segment is chosen");
  explain->add_option("--flat-room", request.flatRoom,
                      "bytes a rank may put in the shared-memory transport's flat exchange "
                      "(8192; TUNE logs the communicator's at creation)");
  explain->add_flag("--json", request.json, "the ranking as one JSON object on one line");

  CLI::App* tuneCommand = app.add_subcommand(
      "tune", "the machine model's parameters: those this host's communicators use, or measured now");
  bool probe = false;
  bool tuneJson = false;
  double budgetMs = 100;
  bool save = false;
  tuneCommand->add_flag("--probe", probe, "measure them now (~100 ms; the cache is left alone)");
  tuneCommand->add_flag("--save", save,
                        "with --probe: replace this host's cache with what was measured "
                        "(refused where the probe was incomplete)")
      ->needs("--probe");
  tuneCommand->add_flag("--json", tuneJson, "print them as JSON, the format TUTTI_TUNING_FILE loads");
  tuneCommand->add_option("--budget-ms", budgetMs, "the probe's time (100)")
      ->check(CLI::Range(1.0, 10000.0));

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
    if (!explainSegment.empty()) {
      const auto segment = tutti::parseBytes(explainSegment);
      if (!segment || *segment == 0)
        return fail("--segment '" + explainSegment + "': a size in bytes (K/M suffixes), above 0");
      request.segmentBytes = *segment;
    }
    auto text = tutti::info::explainCall(request);
    if (!text.ok()) return fail(text.status().message());
    std::fputs(text->c_str(), stdout);
    return 0;
  }
  if (tuneCommand->parsed()) return tune(probe, save, tuneJson, budgetMs);
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
