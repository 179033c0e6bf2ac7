#pragma once

// The `spool` commands, by file: each adds its subcommands to the app; the
// one that runs sets `rc`, the exit code.

#include "cli/common.hpp"

namespace CLI {
class App;
}

namespace spool::cli {

/// push, pop, ack, tail, browse (messages.cpp).
void add_message_commands(CLI::App& app, context& ctx, int& rc);
/// seek, subscription, groups, queues, dlq (admin.cpp).
void add_admin_commands(CLI::App& app, context& ctx, int& rc);
/// cluster promote (cluster.cpp).
void add_cluster_commands(CLI::App& app, context& ctx, int& rc);

} // namespace spool::cli
