// tutti-run: starts N ranks of a program on this host, or on several hosts, like mpirun or
// torchrun.
//   tutti-run -n 4 [options] program [args...]
//   tutti-run --hosts a:2,b:2 [--launcher 'ssh {host}'] [options] program [args...]
// This file is the command line only; launcher.h does the work, agent.h the per-host side
// (`tutti-run --agent`, which tutti-run starts on each host itself; not for users).

#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "run/agent.h"
#include "run/config_report.h"
#include "run/hosts.h"
#include "run/launcher.h"

extern char** environ;  // NOLINT: POSIX

namespace {

// Exit status for a command line tutti-run cannot run (as getopt-based tools use).
constexpr int kUsageExitCode = 2;

constexpr const char* kDescription =
    "tutti-run: start N ranks of a program on this host, or on several hosts, and supervise "
    "them.\n"
    "Usage: tutti-run -n N [options] program [args...]\n"
    "       tutti-run --hosts h1:2,h2:2 [--launcher TEMPLATE] [options] program [args...]\n"
    "       tutti-run --config\n"
    "Options end at the program name (or at --); everything after it goes to the program.";

constexpr const char* kFooter =
    "Each rank gets TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK, TUTTI_LOCAL_WORLD_SIZE,\n"
    "TUTTI_STORE_ADDR (host:port of the rendezvous store tutti-run serves), TUTTI_JOB_ID and\n"
    "TUTTI_SECRET (a fresh random secret that every connection to the store and between\n"
    "ranks must prove it holds), on top of tutti-run's own environment and the -x\n"
    "assignments (which may not set these; TUTTI_SECRET_FILE is dropped). Ranks read stdin from\n"
    "/dev/null. Every output line is prefixed with \"[rank] \" unless --no-tag-output.\n"
    "\n"
    "When a rank exits non-zero or is killed, it is the first failure: the other ranks get\n"
    "--grace seconds to end, then SIGTERM, then SIGKILL 2 s later, and a summary naming the\n"
    "first failing rank is printed on stderr. SIGINT, SIGTERM and SIGHUP are forwarded to\n"
    "every rank; a second one kills the ranks (SIGKILL).\n"
    "\n"
    "Exit status: 0 when every rank succeeded; the first failing rank's exit status, or\n"
    "128+signal if it was killed; 124 when --timeout expired; 128+signal when tutti-run was\n"
    "interrupted; 127 from a rank whose program cannot be executed; 2 for a bad command\n"
    "line; 1 when the job could not be started.\n"
    "\n"
    "Several hosts (--hosts): ranks are numbered host by host in the order given. On each\n"
    "host tutti-run runs the launch command (the --launcher template, its words split as a\n"
    "shell would but without running one, {host} replaced by the name) followed by the\n"
    "absolute path of this tutti-run and --agent, so tutti-run must be installed at the same\n"
    "path on every host. That agent starts the host's ranks and reports their output and\n"
    "ends; the job, the secret included, reaches it on its stdin, never on a command line.\n"
    "The ranks get the agent's environment (what the launch command gives it), tutti-run's\n"
    "TUTTI_* variables and -x. The store listens on --bind, by default on the first IPv4\n"
    "address of this machine's interfaces that is up and not loopback. --cpu-bind applies\n"
    "on each host among its own ranks and CPUs. A failure is named\n"
    "with its host: a rank's end, or a launch command that ends before its ranks did\n"
    "(exit status: the launch command's).";

// Splits "NAME=VALUE"; the value may be empty or contain '='.
bool splitAssignment(const std::string& text, std::pair<std::string, std::string>* out) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return false;
  *out = {text.substr(0, eq), text.substr(eq + 1)};
  return true;
}

int usageError(const std::string& message) {
  std::fprintf(stderr, "tutti-run: %s\nRun with --help for more information.\n",
               message.c_str());
  return kUsageExitCode;
}

}  // namespace

int main(int argc, char** argv) {
  // The per-host agent of --hosts, started by tutti-run itself: its job comes on stdin.
  if (argc == 2 && std::string(argv[1]) == "--agent") return tutti::run::runAgent();
  tutti::run::LaunchOptions options;
  std::vector<std::string> assignments;
  bool noTag = false;

  CLI::App app{kDescription, "tutti-run"};
  app.footer(kFooter);
  CLI::Option* np = app.add_option("-n,--np", options.numRanks,
                                   "number of ranks to start (with --hosts: the total of its "
                                   "slots, which -n may repeat)")
                        ->check(CLI::Range(1, tutti::run::kMaxRanks));
  std::string hostsText;
  CLI::Option* hostsOption =
      app.add_option("--hosts", hostsText,
                     "start the ranks on these hosts, HOST:SLOTS comma-separated (e.g. "
                     "a:2,b:1: ranks 0-1 on a, 2 on b), through --launcher")
          ->type_name("LIST");
  std::string launcherTemplate = tutti::run::kDefaultLauncher;
  CLI::Option* launcherOption =
      app.add_option("--launcher", launcherTemplate,
                     "with --hosts: the command that runs a program on {host} (e.g. "
                     "'ip netns exec {host}')")
          ->type_name("TEMPLATE")
          ->capture_default_str();
  bool showConfig = false;
  app.add_flag("--config", showConfig,
               "print every TUTTI_* variable tutti reads: its default, the value this "
               "environment sets, what it does; then exit");
  app.add_option("--timeout", options.timeoutSeconds,
                 "bound on the whole job in seconds: then the ranks still running are "
                 "named and stopped, and tutti-run exits 124 (0 = no bound)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--grace", options.graceSeconds,
                 "seconds the other ranks get to end on their own after the first failure, "
                 "before SIGTERM")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI::Option* bind =
      app.add_option("--bind", options.bindHost,
                     "address the rendezvous store listens on (\"\" = every interface); with "
                     "--hosts the default is this machine's first non-loopback IPv4 address")
          ->capture_default_str();
  app.add_option("--cpu-bind", options.cpuBind,
                 "none: ranks run where the kernel puts them; block: each rank is bound to "
                 "one CPU, consecutive ranks sharing one when they outnumber the CPUs; auto: "
                 "block when the ranks outnumber the CPUs and split evenly among them, else "
                 "none (faster collectives when oversubscribed)")
      ->check(CLI::IsMember({"none", "block", "auto"}))
      ->capture_default_str();
  app.add_flag("--no-tag-output", noTag, "do not prefix output lines with \"[rank] \"");
  app.add_option("-x", assignments,
                 "set NAME=VALUE in every rank's environment (repeatable)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  app.add_flag("--verbose", options.verbose,
               "report the store address, job id, pids and every exit on stderr");
  // Stop at the first positional argument: the program and its arguments are not ours.
  app.prefix_command();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the error
    return code == 0 ? 0 : kUsageExitCode;
  }

  if (showConfig) {
    std::map<std::string, std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::pair<std::string, std::string> kv;
      if (splitAssignment(*e, &kv)) env.insert(std::move(kv));
    }
    std::fputs(tutti::run::describeConfig(env).c_str(), stdout);
    return 0;
  }
  if (hostsOption->count() > 0) {
    auto hosts = tutti::run::parseHosts(hostsText, tutti::run::kMaxRanks);
    if (!hosts.ok()) return usageError(hosts.status().message());
    options.hosts = std::move(hosts).value();
    const int total = tutti::run::totalSlots(options.hosts);
    if (np->count() > 0 && options.numRanks != total) {
      return usageError("-n " + std::to_string(options.numRanks) + " does not match --hosts " +
                        hostsText + ", which gives " + std::to_string(total) + " ranks");
    }
    options.numRanks = total;
    auto words = tutti::run::splitTemplate(launcherTemplate);
    if (!words.ok()) return usageError(words.status().message());
    options.launcherWords = std::move(words).value();
    options.pickStoreHost = bind->count() == 0;
  } else if (launcherOption->count() > 0) {
    return usageError("--launcher needs --hosts");
  } else if (np->count() == 0) {
    return usageError("-n/--np is required (or --hosts)");
  }
  options.command = app.remaining();
  if (!options.command.empty() && options.command.front() == "--") {
    options.command.erase(options.command.begin());
  } else if (!options.command.empty() && options.command.front().rfind("-", 0) == 0) {
    return usageError("unknown option '" + options.command.front() +
                      "' (use -- before a program whose name starts with '-')");
  }
  if (options.command.empty()) return usageError("no program to run was given");
  options.tagOutput = !noTag;
  for (const std::string& text : assignments) {
    std::pair<std::string, std::string> kv;
    if (!splitAssignment(text, &kv)) return usageError("-x " + text + ": expected NAME=VALUE");
    options.extraEnv.push_back(std::move(kv));
  }
  // The ranks inherit tutti-run's environment as mpirun's and torchrun's do. This copies it
  // verbatim; tutti-run itself reads no variable from it (STYLE.md 3.6).
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) options.inheritedEnv.emplace_back(*e);

  const tutti::Status valid = tutti::run::validateOptions(options);
  if (!valid.ok()) return usageError(valid.message());
  tutti::Result<int> result = tutti::run::runJob(options);
  if (!result.ok()) {
    std::fprintf(stderr, "tutti-run: %s\n", result.status().toString().c_str());
    return tutti::run::kLauncherErrorExitCode;
  }
  return result.value();
}
