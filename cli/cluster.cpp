// `spool cluster promote` (docs/cli.md, docs/cluster.md "Failover"): the
// operator's election of a slot's leader, through the node the CLI talks to.

#include <CLI/CLI.hpp>

#include <memory>

#include "cli/commands.hpp"

namespace spool::cli {

namespace {

struct promote_args {
  std::optional<std::int64_t> slot;
  bool all = false;
  std::string to;
};

int run_promote(context& ctx, const promote_args& a) {
  if (a.slot.has_value() == a.all)
    return usage_error("promote: give --slot N or --all (one of them)");
  node::promote_request req;
  req.slot = a.slot;
  req.all = a.all;
  if (!a.to.empty())
    req.to = a.to;
  auto r = ctx.conn().promote(req);
  if (!r)
    return fail(ctx, r.err());
  std::size_t failed = 0;
  for (auto& s : r->slots)
    failed += s.failure ? 1 : 0;
  if (ctx.as_json) {
    auto out = json::array();
    for (auto& s : r->slots)
      out.push_back(s.failure
                        ? json{{"slot", s.slot}, {"error", s.failure->message}}
                        : json{{"slot", s.slot},
                               {"leader", s.leader},
                               {"epoch", s.epoch}});
    print_json({{"slots", out}});
  } else {
    table t{{"SLOT", "LEADER", "EPOCH", "ERROR"}};
    for (auto& s : r->slots)
      t.add({std::to_string(s.slot), s.failure ? "-" : s.leader,
             s.failure ? "-" : std::to_string(s.epoch),
             s.failure ? s.failure->message : ""});
    t.print();
  }
  // Some slots of --all failed: their elections may be run again.
  return failed == 0 ? exit_code::ok : exit_code::partial;
}

} // namespace

void add_cluster_commands(CLI::App& app, context& ctx, int& rc) {
  auto c = app.add_subcommand("cluster", "Cluster operations");
  c->require_subcommand(1);
  auto args = std::make_shared<promote_args>();
  auto* p = c->add_subcommand(
      "promote", "Elect a slot's leader: fence a majority of its replicas "
                 "to a new epoch, and the one with the longest log leads");
  p->add_option("--slot", args->slot, "the slot");
  p->add_flag("--all", args->all, "every slot the node holds");
  p->add_option("--to", args->to,
                "this node leads (by its --peers name), only if it holds the "
                "longest log");
  p->callback([&ctx, &rc, args] { rc = run_promote(ctx, *args); });
}

} // namespace spool::cli
