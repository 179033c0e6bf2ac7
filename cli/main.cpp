// spool: the command line of Spool (docs/cli.md), on the client library.
// The server comes from --server or SPOOL_SERVER (host:port, default
// 127.0.0.1:6690); --json prints what a script reads; the exit codes are
// in cli/common.hpp and docs/cli.md.

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "wire/spelling.hpp"

namespace {

/// The names of the commands under `app`.
std::vector<std::string_view> command_names(const CLI::App& app) {
  std::vector<std::string_view> out;
  for (auto* sub : app.get_subcommands(std::function<bool(const CLI::App*)>{}))
    out.push_back(sub->get_name());
  return out;
}

/// The command line's words walked through the command tree: the message
/// for a word that names no command where one is needed (with the nearest
/// command, if any is near), or for a command left without the one it
/// needs. None when the commands are right (the error is another).
std::optional<std::string> command_error(const CLI::App& app, int argc,
                                         char** argv) {
  const CLI::App* level = &app;
  std::string path = "spool";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--")
      return std::nullopt;
    if (arg.size() > 1 && arg[0] == '-') { // skip an option's value
      bool is_long = arg[1] == '-';
      // `--name=value`, `--name value`, `-s value`, `-sVALUE`, `-wn`.
      auto name = is_long ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
      const CLI::Option* opt = nullptr;
      for (auto* l = level; l && !opt; l = l->get_parent())
        opt = l->get_option_no_throw(name);
      if (!opt)
        return std::nullopt; // CLI11's own error names the option
      if (opt->get_items_expected_max() > 0 && name == arg) {
        if (i + 1 >= argc)
          return std::nullopt; // CLI11 says the value is missing
        ++i;
      }
      continue;
    }
    auto named = level->get_subcommands(std::function<bool(const CLI::App*)>{
        [&](const CLI::App* sub) { return sub->get_name() == arg; }});
    if (!named.empty()) {
      level = named.front();
      path += " " + arg;
      continue;
    }
    if (level->get_require_subcommand_min() == 0)
      return std::nullopt; // a command's own argument
    auto names = command_names(*level);
    std::string msg = "unknown command '" + arg + "'";
    if (level != &app)
      msg += " of " + path;
    if (auto near = spool::wire::closest(arg, names))
      msg += " (did you mean " + std::string{*near} + "?)";
    return msg + "\nthe commands of " + path + ": " + spool::cli::joined(names);
  }
  if (level->get_require_subcommand_min() == 0)
    return std::nullopt;
  return path
         + " needs a command: " + spool::cli::joined(command_names(*level));
}

} // namespace

int main(int argc, char** argv) {
  spool::cli::context ctx;
  if (const char* env = std::getenv("SPOOL_SERVER"); env && *env)
    ctx.server = env;
  if (const char* env = std::getenv("SPOOL_TOKEN"); env && *env)
    ctx.token = env;
  if (const char* env = std::getenv("SPOOL_CA"); env && *env) {
    ctx.ca = env;
    ctx.tls = true;
  }
  CLI::App app{"spool: push, pop, replay and administer a Spool broker "
               "(msgpack protocol)"};
  app.set_version_flag("--version", "spool " SPOOL_VERSION " (protocol 1)");
  app.require_subcommand(1);
  app.fallthrough();
  std::string timeout = "30s";
  app.add_option("-s,--server", ctx.server,
                 "host:port of the msgpack door (env SPOOL_SERVER)")
      ->capture_default_str();
  app.add_option("--token", ctx.token,
                 "a JWT for a server with tokens on (env SPOOL_TOKEN; the "
                 "variable keeps it out of the process list)");
  app.add_flag("--tls", ctx.tls,
               "speak TLS to the msgpack door (implied by --ca or SPOOL_CA)");
  app.add_option("--ca", ctx.ca,
                 "CA bundle (PEM) the server's certificate must chain to "
                 "(env SPOOL_CA; default: the system's)")
      ->each([&ctx](const std::string&) { ctx.tls = true; });
  app.add_flag("--json", ctx.as_json, "print JSON (for scripts)");
  app.add_option("--timeout", timeout,
                 "a request's deadline (30s; a waiting pop adds its own)");
  int rc = spool::cli::exit_code::ok;
  spool::cli::add_message_commands(app, ctx, rc);
  spool::cli::add_admin_commands(app, ctx, rc);
  spool::cli::add_cluster_commands(app, ctx, rc);
  app.parse_complete_callback([&] {
    auto t = spool::cli::parse_duration(timeout);
    if (!t || t->count() == 0)
      throw CLI::ValidationError("--timeout",
                                 "takes a positive duration (30s, 2m)");
    ctx.timeout = *t;
    if (auto bad = ctx.check_server())
      throw CLI::ValidationError("--server", *bad);
    if (auto bad = ctx.check_tls())
      throw CLI::ValidationError("--ca", *bad);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (auto msg = command_error(app, argc, argv))
      std::fprintf(stderr, "error: %s\nRun with --help for more information.\n",
                   msg->c_str());
    else
      app.exit(e);
    return spool::cli::exit_code::usage;
  } catch (const std::exception& e) { // a command's own failure
    std::fprintf(stderr, "error: %s\n", e.what());
    return spool::cli::exit_code::failed;
  }
  return rc;
}
