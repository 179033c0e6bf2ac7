// `spool seek`, `subscription`, `groups`, `queues`, `dlq` (docs/cli.md).

#include <CLI/CLI.hpp>

#include <cerrno>
#include <map>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "wire/spelling.hpp"

namespace spool::cli {

namespace {

std::string offset_text(std::int64_t o) {
  return o < 0 ? "-" : std::to_string(o);
}

struct seek_args {
  std::string group;
  std::string queue;
  std::string partition;
  bool to_end = false;
  bool to_start = false;
  std::string to;
  std::string by;
  std::optional<std::int64_t> offset;
  bool dry_run = false;
};

int run_seek(context& ctx, const seek_args& a) {
  node::seek_request req;
  req.group = a.group;
  req.queue = a.queue;
  if (!a.partition.empty())
    req.partition = a.partition;
  req.dry_run = a.dry_run;
  int targets = a.to_end + a.to_start + !a.to.empty() + !a.by.empty()
                + a.offset.has_value();
  if (targets != 1)
    return usage_error(
        "name one target: --to-end, --to-start, --to, --by or --offset");
  req.target.to_end = a.to_end;
  req.target.to_start = a.to_start;
  if (!a.to.empty()) {
    auto t = parse_time(a.to);
    if (!t)
      return usage_error("--to takes " + std::string{time_forms} + ", got '"
                         + a.to + "'");
    req.target.timestamp = *t;
  }
  if (!a.by.empty()) {
    auto d = parse_duration(a.by);
    if (!d)
      return usage_error("--by takes a duration (90s, 15m, 2h, 1d): " + a.by);
    req.target.timestamp
        = system_wall_now()
          - std::chrono::duration_cast<std::chrono::microseconds>(*d).count();
  }
  req.target.offset = a.offset;
  auto r = ctx.conn().seek(req);
  if (!r)
    return fail(ctx, r.err());
  if (ctx.as_json) {
    json pos = json::array();
    for (auto& p : r->positions)
      pos.push_back({{"partition", p.partition},
                     {"before", p.before ? json(*p.before) : json(nullptr)},
                     {"after", p.after}});
    print_json({{"consumerGroup", a.group},
                {"queue", a.queue},
                {"dryRun", a.dry_run},
                {"positions", pos}});
    return ok;
  }
  // A position is the last offset the group is done with (-: none).
  table t{{"PARTITION", "COMMITTED BEFORE", "", "AFTER"}};
  for (auto& p : r->positions)
    t.add({p.partition, p.before ? offset_text(*p.before) : "(new)", "->",
           offset_text(p.after)});
  t.print();
  if (a.dry_run)
    std::printf("dry run: nothing moved\n");
  return ok;
}

int run_subscription(context& ctx, const std::string& group,
                     const std::string& when) {
  auto t = parse_time(when);
  if (!t)
    return usage_error("the time is RFC 3339 or now: " + when);
  auto r = ctx.conn().subscription({group, *t});
  if (!r)
    return fail(ctx, r.err());
  if (ctx.as_json)
    print_json({{"consumerGroup", group},
                {"subscriptionTimestamp", time_text(*t)},
                {"rowsUpdated", *r}});
  else
    std::printf("group %s: subscription time set to %s on %zu queue "
                "record(s)\n",
                group.c_str(), time_text(*t).c_str(), *r);
  return ok;
}

json cursor_json(const node::cursor_view& v) {
  json j = {{"consumerGroup", v.group},
            {"queue", v.queue},
            {"partition", v.partition},
            {"partitionId", v.partition_id},
            {"committed", v.committed},
            {"lastOffset", v.last_offset},
            {"lag", v.lag},
            {"inFlight", v.in_flight},
            {"redeliveries", v.redeliveries}};
  if (v.lease)
    j["lease"] = {{"id", v.lease->id},
                  {"epoch", v.lease->epoch},
                  {"expiresAt", time_text(v.lease->expires_at)},
                  {"first", v.lease->first},
                  {"last", v.lease->last}};
  else
    j["lease"] = nullptr;
  return j;
}

int run_groups(context& ctx, const std::string& action,
               const std::string& group, const std::string& queue,
               bool keep_metadata) {
  auto& c = ctx.conn();
  if (action == "delete") {
    node::delete_group_request req;
    req.group = group;
    if (!queue.empty())
      req.queue = queue;
    req.delete_metadata = !keep_metadata;
    auto r = c.delete_group(req);
    if (!r)
      return fail(ctx, r.err());
    if (ctx.as_json)
      print_json({{"consumerGroup", group},
                  {"deletedPartitions", r->deleted_partitions},
                  {"metadataDeleted", r->metadata_deleted}});
    else
      std::printf("deleted group %s: %zu partition cursor(s)\n", group.c_str(),
                  r->deleted_partitions);
    return ok;
  }
  node::groups_request req;
  if (!group.empty())
    req.group = group;
  if (!queue.empty())
    req.queue = queue;
  auto r = c.groups(req);
  if (!r)
    return fail(ctx, r.err());
  if (action == "describe" && r->empty())
    return fail(
        ctx, make_error(errc::not_found, "Consumer group not found: ", group));
  if (ctx.as_json) {
    json out = json::array();
    for (auto& v : *r)
      out.push_back(cursor_json(v));
    print_json(out);
    return ok;
  }
  if (action == "describe") {
    table t{{"QUEUE", "PARTITION", "COMMITTED", "LAST", "LAG", "LEASE"}};
    for (auto& v : *r)
      t.add({v.queue, v.partition, offset_text(v.committed),
             offset_text(v.last_offset), std::to_string(v.lag),
             v.lease ? v.lease->id + " " + std::to_string(v.lease->first) + ".."
                           + std::to_string(v.lease->last) + " until "
                           + time_text(v.lease->expires_at)
                     : "-"});
    t.print();
    return ok;
  }
  struct sums {
    std::size_t partitions = 0;
    std::int64_t lag = 0;
    std::size_t leased = 0;
  };
  std::map<std::pair<std::string, std::string>, sums> by;
  for (auto& v : *r) {
    auto& s = by[{v.group, v.queue}];
    ++s.partitions;
    s.lag += v.lag;
    s.leased += v.lease.has_value();
  }
  table t{{"GROUP", "QUEUE", "PARTITIONS", "LAG", "LEASED"}};
  for (auto& [k, s] : by)
    t.add({k.first, k.second, std::to_string(s.partitions),
           std::to_string(s.lag), std::to_string(s.leased)});
  t.print();
  return ok;
}

std::string options_text(const options_patch& o) {
  std::string out;
  for (auto& n : int_option_names)
    if (o.*n.field)
      out += std::string{n.name} + "=" + std::to_string(*(o.*n.field)) + " ";
  for (auto& n : bool_option_names)
    if (o.*n.field)
      out += std::string{n.name} + "=" + (*(o.*n.field) ? "true" : "false")
             + " ";
  if (o.retry_backoff_ms) {
    out += "retryBackoffMs=";
    for (std::size_t i = 0; i < o.retry_backoff_ms->size(); ++i)
      out += (i ? "," : "") + std::to_string((*o.retry_backoff_ms)[i]);
  }
  return out;
}

json options_json(const options_patch& o) {
  json j = json::object();
  for (auto& n : int_option_names)
    if (o.*n.field)
      j[n.name] = *(o.*n.field);
  for (auto& n : bool_option_names)
    if (o.*n.field)
      j[n.name] = *(o.*n.field);
  if (o.retry_backoff_ms)
    j["retryBackoffMs"] = *o.retry_backoff_ms;
  return j;
}

json queue_json(const client::queue_detail& q) {
  json parts = json::array();
  for (auto& p : q.partitions)
    parts.push_back({{"name", p.name},
                     {"id", p.id},
                     {"lastOffset", p.last_offset},
                     {"watermark", p.watermark}});
  return {{"name", q.name},      {"namespace", q.name_space},
          {"task", q.task},      {"createdAt", time_text(q.created_at)},
          {"partitions", parts}, {"options", options_json(q.options)}};
}

std::int64_t retained(const node::partition_info& p) {
  return std::max<std::int64_t>(0, p.last_offset + 1 - p.watermark);
}

struct queue_args {
  std::string name;
  std::string name_space;
  std::string task;
  std::vector<std::string> options;
  std::string partition;
  std::optional<std::int64_t> below;
};

/// Every option name configure takes.
std::vector<std::string_view> option_names() {
  std::vector<std::string_view> out;
  for (auto& n : int_option_names)
    out.push_back(n.name);
  for (auto& n : bool_option_names)
    out.push_back(n.name);
  out.push_back("retryBackoffMs");
  return out;
}

/// `name=value` options of configure (integers, true/false, lists).
std::optional<std::string> read_options(const std::vector<std::string>& kvs,
                                        options_patch& p) {
  for (auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos)
      return "--option takes name=value: " + kv;
    auto k = kv.substr(0, eq), v = kv.substr(eq + 1);
    bool known = false;
    for (auto& n : int_option_names)
      if (k == n.name) {
        char* end = nullptr;
        errno = 0;
        auto x = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end || errno == ERANGE)
          return k + " takes an integer: " + v;
        p.*n.field = x;
        known = true;
      }
    for (auto& n : bool_option_names)
      if (k == n.name) {
        if (v != "true" && v != "false")
          return k + " takes true or false: " + v;
        p.*n.field = v == "true";
        known = true;
      }
    if (k == "retryBackoffMs") {
      auto& list = p.retry_backoff_ms.emplace();
      std::size_t at = 0;
      while (at <= v.size() && !v.empty()) {
        auto comma = v.find(',', at);
        list.push_back(
            std::strtoll(v.substr(at, comma - at).c_str(), nullptr, 10));
        if (comma == std::string::npos)
          break;
        at = comma + 1;
      }
      known = true;
    }
    if (!known) {
      auto near = wire::closest(k, option_names());
      return "unknown option " + k
             + (near ? " (did you mean " + std::string{*near} + "?)" : "")
             + "; the options are " + joined(option_names());
    }
  }
  return std::nullopt;
}

int run_queues(context& ctx, const std::string& action, const queue_args& a) {
  auto& c = ctx.conn();
  if (action == "configure") {
    node::configure_request req;
    req.queue = a.name;
    if (!a.name_space.empty())
      req.name_space = a.name_space;
    if (!a.task.empty())
      req.task = a.task;
    if (auto bad = read_options(a.options, req.options))
      return usage_error(*bad);
    auto r = c.configure(req);
    if (!r)
      return fail(ctx, r.err());
    if (ctx.as_json) { // (configure answers no partitions, no creation time)
      print_json({{"name", r->name},
                  {"namespace", r->name_space},
                  {"task", r->task},
                  {"created", r->created},
                  {"options", options_json(r->options)},
                  {"warnings", r->warnings}});
    } else {
      std::printf("%s queue %s: %s\n", r->created ? "created" : "configured",
                  r->name.c_str(), options_text(r->options).c_str());
    }
    return ok;
  }
  if (action == "delete") {
    auto r = c.delete_queue(a.name);
    if (!r)
      return fail(ctx, r.err());
    if (ctx.as_json)
      print_json({{"queue", a.name}, {"existed", *r}});
    else
      std::printf(*r ? "deleted queue %s\n" : "no queue %s (nothing to do)\n",
                  a.name.c_str());
    return ok;
  }
  if (action == "purge") {
    node::purge_request req;
    req.queue = a.name;
    if (!a.partition.empty())
      req.partition = a.partition;
    req.below = a.below;
    auto r = c.purge(req);
    if (!r)
      return fail(ctx, r.err());
    if (ctx.as_json)
      print_json({{"queue", a.name}, {"partitionsPurged", *r}});
    else
      std::printf("purged %zu partition(s) of %s\n", *r, a.name.c_str());
    return ok;
  }
  auto r = action == "describe" ? c.queues(a.name) : c.queues();
  if (!r)
    return fail(ctx, r.err());
  if (ctx.as_json) {
    json out = json::array();
    for (auto& q : *r)
      out.push_back(queue_json(q));
    print_json(action == "describe" && !out.empty() ? out.at(0) : out);
    return ok;
  }
  if (action == "describe" && !r->empty()) {
    auto& q = r->front();
    std::printf("queue %s%s%s, created %s\n", q.name.c_str(),
                q.name_space.empty()
                    ? ""
                    : (" (namespace " + q.name_space + ")").c_str(),
                q.task.empty() ? "" : (" (task " + q.task + ")").c_str(),
                time_text(q.created_at).c_str());
    std::printf("options: %s\n", options_text(q.options).c_str());
    table t{{"PARTITION", "ID", "LAST OFFSET", "WATERMARK", "MESSAGES"}};
    for (auto& p : q.partitions)
      t.add({p.name, p.id, offset_text(p.last_offset),
             std::to_string(p.watermark), std::to_string(retained(p))});
    t.print();
    return ok;
  }
  table t{{"QUEUE", "PARTITIONS", "MESSAGES", "NAMESPACE", "TASK"}};
  for (auto& q : *r) {
    std::int64_t n = 0;
    for (auto& p : q.partitions)
      n += retained(p);
    t.add({q.name, std::to_string(q.partitions.size()), std::to_string(n),
           q.name_space, q.task});
  }
  t.print();
  return ok;
}

struct dlq_args {
  std::vector<std::uint64_t> ids;
  std::string queue;
  std::string group;
  std::string partition;
  std::size_t limit = 100;
  std::size_t offset = 0;
};

dlq_filter filter_of(const dlq_args& a) {
  dlq_filter f;
  f.ids = a.ids;
  if (!a.queue.empty())
    f.queue = a.queue;
  if (!a.group.empty())
    f.group = a.group;
  if (!a.partition.empty())
    f.partition = a.partition;
  return f;
}

int run_dlq(context& ctx, const std::string& action, const dlq_args& a) {
  auto& c = ctx.conn();
  if (action == "list") {
    dlq_query q;
    q.filter = filter_of(a);
    q.limit = a.limit;
    q.offset = a.offset;
    auto r = c.dlq(q);
    if (!r)
      return fail(ctx, r.err());
    if (ctx.as_json) {
      json msgs = json::array();
      for (auto& d : r->messages) {
        auto j = message_json(d.frame);
        j["dlqId"] = d.dlq_id;
        j["consumerGroup"] = d.group;
        j["error"] = d.error;
        j["failedAt"] = time_text(d.failed_at);
        msgs.push_back(j);
      }
      print_json({{"total", r->total}, {"messages", msgs}});
      return ok;
    }
    table t{{"DLQ ID", "QUEUE", "PARTITION", "OFFSET", "GROUP", "FAILED AT",
             "ERROR", "PAYLOAD"}};
    for (auto& d : r->messages)
      t.add({std::to_string(d.dlq_id), d.queue, d.partition,
             std::to_string(d.frame.offset), d.group, time_text(d.failed_at),
             d.error, payload_text(d.frame, 60)});
    t.print();
    std::printf("%zu dead letter(s) in all\n", r->total);
    return ok;
  }
  if (a.ids.empty() && a.queue.empty())
    return usage_error("name dead letters by id, or at least --queue");
  auto f = filter_of(a);
  auto r = action == "requeue" ? c.dlq_requeue(f) : c.dlq_delete(f);
  if (!r)
    return fail(ctx, r.err());
  if (ctx.as_json)
    print_json({{action == "requeue" ? "requeued" : "deleted", r->count},
                {"remaining", r->remaining}});
  else
    std::printf("%s %zu dead letter(s); %zu remain\n",
                action == "requeue" ? "requeued" : "deleted", r->count,
                r->remaining);
  return ok;
}

} // namespace

void add_admin_commands(CLI::App& app, context& ctx, int& rc) {
  auto seek = std::make_shared<seek_args>();
  auto* s = app.add_subcommand(
      "seek", "Move a group's cursor on a queue (or one partition)");
  s->add_option("group", seek->group, "the consumer group")->required();
  s->add_option("queue", seek->queue, "the queue")->required();
  s->add_option("-p,--partition", seek->partition, "one partition only");
  s->add_flag("--to-end", seek->to_end, "skip everything there is now");
  s->add_flag("--to-start", seek->to_start, "replay everything retained");
  s->add_option("--to", seek->to, "replay from this time (RFC 3339)");
  s->add_option("--by", seek->by, "replay from this long ago (15m, 2h, 1d)");
  s->add_option("--offset", seek->offset, "the next offset to deliver");
  s->add_flag("--dry-run", seek->dry_run, "show before -> after; move nothing");
  s->callback([&ctx, &rc, seek] { rc = run_seek(ctx, *seek); });

  auto sub = app.add_subcommand("subscription", "A group's subscription");
  sub->require_subcommand(1);
  auto set_args = std::make_shared<std::pair<std::string, std::string>>();
  auto* set = sub->add_subcommand(
      "set", "Rewrite the subscription time of the queues the group has "
             "subscribed to (its subscription records; semantics.md)");
  set->add_option("group", set_args->first, "the consumer group")->required();
  set->add_option("time", set_args->second, "RFC 3339, or now")->required();
  set->callback([&ctx, &rc, set_args] {
    rc = run_subscription(ctx, set_args->first, set_args->second);
  });

  struct group_args {
    std::string group, queue;
    bool keep = false;
  };
  auto g = app.add_subcommand("groups", "Consumer groups");
  g->require_subcommand(1);
  for (auto action : {"list", "describe", "delete"}) {
    auto args = std::make_shared<group_args>();
    auto* cmd = g->add_subcommand(
        action, std::string{action} == "list"
                    ? "Every group per queue: partitions, lag, leases"
                : std::string{action} == "describe"
                    ? "A group's position per partition: committed, last "
                      "offset, lag, lease"
                    : "Delete a group's cursors (all queues, or one)");
    if (std::string{action} != "list")
      cmd->add_option("group", args->group, "the consumer group")->required();
    cmd->add_option("-q,--queue", args->queue, "one queue only");
    if (std::string{action} == "delete")
      cmd->add_flag("--keep-metadata", args->keep,
                    "keep its subscription record");
    cmd->callback([&ctx, &rc, args, action] {
      rc = run_groups(ctx, action, args->group, args->queue, args->keep);
    });
  }

  auto q = app.add_subcommand("queues", "Queues");
  q->require_subcommand(1);
  for (auto action : {"list", "describe", "configure", "purge", "delete"}) {
    auto args = std::make_shared<queue_args>();
    std::string act{action};
    auto* cmd = q->add_subcommand(
        action, act == "list"        ? "Every queue with its size"
                : act == "describe"  ? "A queue's partitions and options"
                : act == "configure" ? "Create a queue or change its options"
                : act == "purge"     ? "Delete a queue's messages (below an "
                                       "offset)"
                                     : "Delete a queue with everything of it");
    if (act != "list")
      cmd->add_option("queue", args->name, "the queue")->required();
    if (act == "configure") {
      cmd->add_option("--namespace", args->name_space, "its namespace");
      cmd->add_option("--task", args->task, "its task");
      cmd->add_option("-o,--option", args->options,
                      "an option, name=value (leaseTime=30, "
                      "retryBackoffMs=100,500); the names: "
                          + joined(option_names())
                          + " (docs/operations.md says what each does)");
    }
    if (act == "purge") {
      cmd->add_option("-p,--partition", args->partition, "one partition");
      cmd->add_option("--below", args->below, "only offsets below this");
    }
    cmd->callback([&ctx, &rc, args, act] { rc = run_queues(ctx, act, *args); });
  }

  auto d = app.add_subcommand("dlq", "Dead letters");
  d->require_subcommand(1);
  for (auto action : {"list", "requeue", "delete"}) {
    auto args = std::make_shared<dlq_args>();
    std::string act{action};
    auto* cmd = d->add_subcommand(
        action, act == "list"      ? "List dead letters, newest first"
                : act == "requeue" ? "Deliver dead letters again"
                                   : "Delete dead letters");
    if (act != "list")
      cmd->add_option("ids", args->ids, "dead letter ids");
    cmd->add_option("-q,--queue", args->queue, "of this queue");
    cmd->add_option("-g,--group", args->group, "of this group");
    cmd->add_option("-p,--partition", args->partition, "of this partition");
    if (act == "list") {
      cmd->add_option("-n,--limit", args->limit, "at most (100)")
          ->check(CLI::Range(1, 10'000));
      cmd->add_option("--offset", args->offset, "skip this many");
    }
    cmd->callback([&ctx, &rc, args, act] { rc = run_dlq(ctx, act, *args); });
  }
}

} // namespace spool::cli
