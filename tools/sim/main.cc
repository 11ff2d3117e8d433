// tutti-sim: the predicted time of a collective on a cluster no one here can run, from the
// real schedules over the machine model (src/tuning/simulate.h; docs/simulator.md).
//   tutti-sim COLLECTIVE SIZE --ranks N --ranks-per-host K [--net flat|fat-tree:...|rail:...|FILE]
//             [--algo NAME] [--model FILE] [--topo FILE --hosts H] [--plot FILE.png]
// This file is the command line only; sim/sweep.h does the work.

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "base/strings.h"
#include "sim/sweep.h"
#include "topology/view_json.h"
#if __has_include("tuning/model_json.h")
#include "tuning/model_json.h"
#define TUTTI_SIM_HAS_MODEL_FILE 1
#endif

namespace {

constexpr int kUsageExitCode = 2;

int fail(const std::string& message) {
  std::fprintf(stderr, "tutti-sim: %s\n", message.c_str());
  return 1;
}

// The folder of this executable, where its plot script is installed alongside.
std::string ownFolder() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string text(path, static_cast<std::size_t>(n));
  const std::size_t slash = text.rfind('/');
  return slash == std::string::npos ? "." : text.substr(0, slash);
}

// Quoted for the shell's single-quote form.
std::string shellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int plot(const std::string& png, const std::string& csv, const std::string& title) {
  const std::string script = ownFolder() + "/tutti-sim-plot.py";
  if (::access(script.c_str(), R_OK) != 0)
    return fail("--plot: the plot script " + script + " is missing");
  if (::access("/usr/bin/python3", X_OK) != 0)
    return fail("--plot needs /usr/bin/python3 with python3-matplotlib (apt-get install python3-matplotlib)");
  const std::string data = png + ".csv";
  {
    std::ofstream out(data);
    out << csv;
    if (!out) return fail("--plot: cannot write " + data);
  }
  const std::string command = "/usr/bin/python3 " + shellQuote(script) + " " + shellQuote(data) +
                              " " + shellQuote(png) + " " + shellQuote(title);
  const int rc = std::system(command.c_str());
  std::remove(data.c_str());
  if (rc != 0) return fail("--plot: the plot script failed (see above)");
  std::printf("plot: %s\n", png.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tutti;
  CLI::App app{"tutti-sim: predicted time, algbw and busbw of a collective on a simulated cluster"};
  std::string collective;
  std::string sizes;
  int ranks = 0;
  int ranksPerHost = 0;
  int cores = 0;
  int hosts = 0;
  std::string net = "flat";
  std::string algo;
  std::string modelFile;
  std::string topoFile;
  std::string plotFile;
  std::string dtypeName = "float32";
  std::string segment = "512K";
  std::string flatRoom = "0";
  int inflight = 16;
  bool noFastPath = false;
  app.add_option("collective", collective, "allreduce, allgather, broadcast, ... (tutti-bench's names)")
      ->required();
  app.add_option("size", sizes, "bytes per call as tutti-bench counts them: 64M, or MIN:MAX doubling (8:256M)")
      ->required();
  app.add_option("--ranks", ranks, "ranks in all")->check(CLI::Range(1, 1 << 24));
  app.add_option("--ranks-per-host", ranksPerHost, "ranks on each host (consecutive blocks)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--cores", cores, "cores per host (default: the model's coresPerHost)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--net", net, "flat, fat-tree:hosts-per-leaf=K,oversub=R[,...], rail:rails=R[,...] or a JSON file");
  app.add_option("--algo", algo, "simulate this algorithm only");
  app.add_option("--model", modelFile, "a model file (tutti-info tune --probe writes one)");
  app.add_option("--topo", topoFile, "a TUTTI_TOPO_DUMP_FILE view whose hosts are replicated to --hosts");
  app.add_option("--hosts", hosts, "with --topo: hosts in the simulated cluster")->check(CLI::Range(1, 1 << 24));
  app.add_option("--plot", plotFile, "write busbw against size per algorithm to this PNG");
  app.add_option("--dtype", dtypeName, "element type (float32)");
  app.add_option("--segment", segment, "pipelining segment, bytes (TUTTI_SEGMENT_BYTES: 512K)");
  app.add_option("--inflight", inflight, "steps in flight per rank (TUTTI_MAX_INFLIGHT: 16)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--flat-room", flatRoom, "one host: calls up to this many bytes per rank run as a flat exchange (0: none)");
  app.add_flag("--no-fast-path", noFastPath, "run every rank even where the schedules are symmetric");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kUsageExitCode;
  }

  auto sizeList = sim::parseSizes(sizes);
  if (!sizeList.ok()) return fail(sizeList.status().message());
  const auto dtype = parseDataType(dtypeName);
  if (!dtype) return fail("unknown --dtype '" + dtypeName + "'");
  const auto segmentBytes = parseBytes(segment);
  if (!segmentBytes || *segmentBytes == 0) return fail("--segment: a size in bytes expected, got '" + segment + "'");
  const auto room = parseBytes(flatRoom);
  if (!room) return fail("--flat-room: a size in bytes expected, got '" + flatRoom + "'");

  tuning::MachineModel model = sim::simDefaultModel();
  if (!modelFile.empty()) {
#ifdef TUTTI_SIM_HAS_MODEL_FILE
    auto loaded = tuning::loadModelFile(modelFile);
    if (!loaded.ok()) return fail(loaded.status().message());
    model = std::move(loaded).value();
#else
    return fail("--model: this build reads no model files yet");
#endif
  }
  if (cores > 0) model.coresPerHost = cores;

  Result<tuning::Placement> placement = Status(ErrorCode::kInvalidArgument, "");
  if (!topoFile.empty()) {
    if (ranks > 0 || ranksPerHost > 0)
      return fail("--topo takes --hosts H (the view's hosts repeated), not --ranks/--ranks-per-host");
    auto view = topo::loadViewFile(topoFile);
    if (!view.ok()) return fail(view.status().message());
    placement = tuning::Placement::replicate(*view, hosts > 0 ? hosts : static_cast<int>(view->hosts.size()));
  } else {
    if (ranks < 1) return fail("--ranks N is required (or --topo FILE --hosts H)");
    if (hosts > 0) return fail("--hosts goes with --topo; without it, give --ranks-per-host");
    placement = tuning::Placement::synthetic(ranks, ranksPerHost > 0 ? ranksPerHost : ranks, cores);
  }
  if (!placement.ok()) return fail(placement.status().message());
  auto network = tuning::Network::fromArgument(net);
  if (!network.ok()) return fail(network.status().message());

  sim::SweepRequest request;
  request.collective = collective;
  request.sizes = *sizeList;
  request.algorithm = algo;
  request.dtype = *dtype;
  request.segmentBytes = *segmentBytes;
  request.options.maxInflight = inflight;
  request.options.allowFastPath = !noFastPath;
  request.options.flatRoom = *room;
  auto rows = sim::runSweep(request, model, *placement, *network);
  if (!rows.ok()) return fail(rows.status().message());

  std::printf("# tutti-sim %s: %s, network %s, model %s\n", collective.c_str(),
              placement->describe().c_str(), network->describe().c_str(), model.origin.c_str());
  std::fputs(sim::formatTable(*rows).c_str(), stdout);
  if (!plotFile.empty())
    return plot(plotFile, sim::formatCsv(*rows),
                strFormat("%s, %s, %s", collective.c_str(), placement->describe().c_str(),
                          network->describe().c_str()));
  return 0;
}
