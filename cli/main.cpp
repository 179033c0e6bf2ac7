// spool: the command line of Spool (docs/cli.md), on the client library.
// The server comes from --server or SPOOL_SERVER (host:port, default
// 127.0.0.1:6690); --json prints what a script reads; the exit codes are
// in cli/common.hpp and docs/cli.md.

#include <CLI/CLI.hpp>

#include <cstdlib>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  spool::cli::context ctx;
  if (const char* env = std::getenv("SPOOL_SERVER"); env && *env)
    ctx.server = env;
  CLI::App app{"spool: push, pop, replay and administer a Spool broker "
               "(msgpack protocol)"};
  app.set_version_flag("--version", "spool 0.1.0 (protocol 1)");
  app.require_subcommand(1);
  app.fallthrough();
  std::string timeout = "30s";
  app.add_option("-s,--server", ctx.server,
                 "host:port of the msgpack door (env SPOOL_SERVER)")
      ->capture_default_str();
  app.add_flag("--json", ctx.as_json, "print JSON (for scripts)");
  app.add_option("--timeout", timeout,
                 "a request's deadline (30s; a waiting pop adds its own)");
  int rc = spool::cli::exit_code::ok;
  spool::cli::add_message_commands(app, ctx, rc);
  spool::cli::add_admin_commands(app, ctx, rc);
  app.parse_complete_callback([&] {
    auto t = spool::cli::parse_duration(timeout);
    if (!t || t->count() == 0)
      throw CLI::ValidationError("--timeout",
                                 "takes a positive duration (30s, 2m)");
    ctx.timeout = *t;
    if (auto bad = ctx.check_server())
      throw CLI::ValidationError("--server", *bad);
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
    app.exit(e);
    return spool::cli::exit_code::usage;
  } catch (const std::exception& e) { // a command's own failure
    std::fprintf(stderr, "error: %s\n", e.what());
    return spool::cli::exit_code::failed;
  }
  return rc;
}
