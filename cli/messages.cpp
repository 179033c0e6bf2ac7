// `spool push`, `pop`, `ack`, `tail`, `browse` (docs/cli.md).

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"

namespace spool::cli {

namespace {

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) {
  interrupted = true;
}

/// `key=value` pairs (headers).
std::optional<std::vector<node::header>>
parse_pairs(const std::vector<std::string>& kvs) {
  std::vector<node::header> out;
  for (auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return std::nullopt;
    out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return out;
}

struct push_args {
  std::string queue;
  std::vector<std::string> payloads;
  std::string partition = node::default_partition;
  std::string transaction_id;
  std::string trace_id;
  std::vector<std::string> headers;
  bool text = false;
  bool binary = false;
  bool envelope = false;
  std::size_t batch = 1000;
  bool progress = false;
};

/// One payload argument or stdin line as a push item.
std::optional<std::string> make_item(const push_args& a, std::string payload,
                                     node::push_item& it) {
  it.queue = a.queue;
  it.partition = a.partition;
  if (!a.trace_id.empty())
    it.trace_id = a.trace_id;
  if (a.binary) {
    it.payload = std::move(payload);
    it.binary = true;
    return std::nullopt;
  }
  if (a.text) { // (bytes that are not UTF-8 become U+FFFD)
    it.payload
        = json(payload).dump(-1, ' ', false, json::error_handler_t::replace);
    return std::nullopt;
  }
  auto j = nlohmann::ordered_json::parse(payload, nullptr, false);
  if (j.is_discarded())
    return "not JSON (use --text for plain text): " + payload.substr(0, 80);
  if (!a.envelope) {
    it.payload = std::move(payload); // as written
    return std::nullopt;
  }
  if (!j.is_object() || !j.contains("payload"))
    return "an --envelope line must be an object with a payload";
  it.payload = j["payload"].dump();
  if (j.contains("partition") && j["partition"].is_string())
    it.partition = j["partition"];
  if (j.contains("transactionId") && j["transactionId"].is_string())
    it.transaction_id = j["transactionId"].get<std::string>();
  if (j.contains("traceId") && j["traceId"].is_string())
    it.trace_id = j["traceId"];
  if (j.contains("headers") && j["headers"].is_object())
    for (auto& [k, v] : j["headers"].items())
      it.headers.emplace_back(k,
                              v.is_string() ? v.get<std::string>() : v.dump());
  return std::nullopt;
}

int run_push(context& ctx, const push_args& a) {
  auto headers = parse_pairs(a.headers);
  if (!headers)
    return usage_error("--header takes key=value");
  if (!a.transaction_id.empty() && a.payloads.size() != 1)
    return usage_error("--transaction-id goes with one payload argument");
  auto& c = ctx.conn();
  if (!a.payloads.empty()) {
    std::vector<node::push_item> items;
    for (auto& p : a.payloads) {
      node::push_item it;
      if (auto bad = make_item(a, p, it))
        return usage_error(*bad);
      it.headers = *headers;
      if (!a.transaction_id.empty())
        it.transaction_id = a.transaction_id;
      items.push_back(std::move(it));
    }
    auto r = c.push(std::move(items));
    if (!r)
      return fail(ctx, r.err());
    if (ctx.as_json) {
      json out = json::array();
      for (auto& it : *r)
        out.push_back(
            {{"queue", it.queue},
             {"partition", it.partition},
             {"partitionId", it.partition_id},
             {"offset", it.offset},
             {"transactionId", it.transaction_id},
             {"status", it.status == node::push_status::queued ? "queued"
                                                               : "duplicate"}});
      print_json(out);
      return ok;
    }
    table t{{"PARTITION", "OFFSET", "STATUS", "TRANSACTION ID"}};
    for (auto& it : *r)
      t.add({it.partition, std::to_string(it.offset),
             it.status == node::push_status::queued ? "queued" : "duplicate",
             it.transaction_id});
    t.print();
    return ok;
  }
  // NDJSON on stdin, in batches; a progress line on a terminal.
  bool show = a.progress || ::isatty(2);
  std::size_t pushed = 0, duplicates = 0, line_no = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  std::vector<node::push_item> batch;
  std::size_t batch_bytes = 0;
  auto flush = [&]() -> std::optional<api_error> {
    if (batch.empty())
      return std::nullopt;
    auto r = c.push(std::move(batch));
    batch.clear();
    batch_bytes = 0;
    if (!r)
      return r.err();
    for (auto& it : *r)
      (it.status == node::push_status::queued ? pushed : duplicates) += 1;
    auto now = std::chrono::steady_clock::now();
    if (show && now - last >= std::chrono::milliseconds{500}) {
      last = now;
      double secs = std::chrono::duration<double>(now - t0).count();
      std::fprintf(stderr, "\rpushed %zu messages (%.0f msgs/s)", pushed,
                   static_cast<double>(pushed) / secs);
    }
    return std::nullopt;
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    ++line_no;
    if (line.empty())
      continue;
    node::push_item it;
    if (auto bad = make_item(a, line, it)) {
      if (show)
        std::fprintf(stderr, "\n");
      return usage_error("line " + std::to_string(line_no) + ": " + *bad + " ("
                         + std::to_string(pushed) + " pushed before it)");
    }
    for (auto& h : *headers)
      it.headers.push_back(h);
    batch_bytes += it.payload.size() + 64;
    batch.push_back(std::move(it));
    // A request stays well under the server's frame limit (64 MiB).
    if (batch.size() >= a.batch || batch_bytes >= (std::size_t{16} << 20))
      if (auto e = flush()) {
        if (show)
          std::fprintf(stderr, "\n");
        e->message += " (after " + std::to_string(pushed) + " pushed)";
        return fail(ctx, *e);
      }
  }
  if (auto e = flush()) {
    if (show)
      std::fprintf(stderr, "\n");
    e->message += " (after " + std::to_string(pushed) + " pushed)";
    return fail(ctx, *e);
  }
  double secs
      = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  if (show)
    std::fprintf(stderr, "\r");
  if (ctx.as_json)
    print_json({{"queue", a.queue},
                {"pushed", pushed},
                {"duplicates", duplicates},
                {"seconds", secs}});
  else
    std::printf("pushed %zu messages to %s (%zu duplicates) in %.2f s\n",
                pushed, a.queue.c_str(), duplicates, secs);
  return ok;
}

struct pop_args {
  std::string queue;
  std::string partition;
  std::string group;
  std::size_t batch = 1;
  bool wait = false;
  std::string timeout = "30s";
  bool auto_ack = false;
  std::string mode;
  std::string from;
};

std::optional<node::pop_request> pop_request_of(const pop_args& a,
                                                std::string& why) {
  node::pop_request p;
  p.queue = a.queue;
  if (!a.partition.empty())
    p.partition = a.partition;
  if (!a.group.empty())
    p.group = a.group;
  p.batch = a.batch;
  p.wait = a.wait;
  auto t = parse_duration(a.timeout);
  if (!t) {
    why = "--timeout takes a duration (30s, 2m, 500ms)";
    return std::nullopt;
  }
  p.timeout = *t;
  p.auto_ack = a.auto_ack;
  // The server reads an unknown mode as `all` and an unreadable time as
  // `now` (the product document's rule); here the words are refused.
  if (!a.mode.empty() && a.mode != "all" && a.mode != "new"
      && a.mode != "new-only") {
    why = "--mode takes all or new, got '" + a.mode + "'";
    return std::nullopt;
  }
  if (!a.from.empty() && !parse_time(a.from)) {
    why = "--from takes " + std::string{time_forms} + ", got '" + a.from + "'";
    return std::nullopt;
  }
  p.subscription_mode = a.mode;
  p.subscription_from = a.from;
  return p;
}

void print_messages(const context& ctx, const node::pop_reply& r) {
  if (ctx.as_json) {
    json msgs = json::array();
    for (auto& m : r.messages)
      msgs.push_back(message_json(m));
    print_json({{"queue", r.queue},
                {"consumerGroup", r.group},
                {"leaseId", r.messages.front().lease_id},
                {"messages", msgs}});
    return;
  }
  table t{{"PARTITION", "OFFSET", "DELIVERIES", "TRANSACTION ID", "PAYLOAD"}};
  for (auto& m : r.messages)
    t.add({m.partition, std::to_string(m.offset),
           std::to_string(m.delivery_count), m.transaction_id,
           payload_text(m)});
  t.print();
  auto& first = r.messages.front();
  if (!first.lease_id.empty()) {
    auto group = r.group.empty() || r.group == "__QUEUE_MODE__"
                     ? std::string{}
                     : " -g " + r.group;
    std::printf("lease %s (epoch %llu): ack with `spool ack %s "
                "<transactionId>...%s --lease %s`\n",
                first.lease_id.c_str(),
                static_cast<unsigned long long>(first.lease_epoch),
                first.partition_id.c_str(), group.c_str(),
                first.lease_id.c_str());
  }
}

int run_pop(context& ctx, const pop_args& a) {
  std::string why;
  auto p = pop_request_of(a, why);
  if (!p)
    return usage_error(why);
  auto r = ctx.conn().pop(*p);
  if (!r)
    return fail(ctx, r.err());
  if (r->messages.empty()) {
    if (ctx.as_json)
      print_json(
          {{"messages", json::array()}, {"empty", to_string(r->reason)}});
    else
      std::fprintf(stderr, "no messages (%s)\n", to_string(r->reason));
    return ok;
  }
  print_messages(ctx, *r);
  return ok;
}

struct ack_args {
  std::string partition_id;
  std::vector<std::string> transaction_ids;
  std::string group;
  std::string lease;
  std::string status = "completed";
  std::string error;
};

int print_ack(const context& ctx, const node::ack_reply& r,
              const std::vector<std::string>& txids,
              const std::string& status) {
  bool all = true;
  json out = json::array();
  table t{{"TRANSACTION ID", "RESULT", "ERROR"}};
  for (std::size_t i = 0; i < r.items.size(); ++i) {
    auto& it = r.items[i];
    all &= it.success;
    auto txid = i < txids.size() ? txids[i] : std::string{};
    out.push_back({{"transactionId", txid},
                   {"success", it.success},
                   {"error", it.error},
                   {"dlq", it.dead_lettered}});
    t.add({txid,
           it.success
               ? (it.dead_lettered ? std::string{"dead-lettered"} : status)
               : std::string{"refused"},
           it.error});
  }
  if (ctx.as_json)
    print_json(out);
  else
    t.print();
  return all ? ok : partial;
}

int run_ack(context& ctx, const ack_args& a) {
  node::ack_request req;
  if (!a.group.empty())
    req.group = a.group;
  ack_status st;
  if (a.status == "completed" || a.status == "success")
    st = ack_status::completed;
  else if (a.status == "failed")
    st = ack_status::failed;
  else if (a.status == "dlq")
    st = ack_status::dlq;
  else if (a.status == "retry")
    st = ack_status::retry;
  else
    return usage_error("--status is completed, failed, dlq or retry");
  for (auto& tx : a.transaction_ids) {
    node::ack_item it;
    it.partition_id = a.partition_id;
    it.transaction_id = tx;
    it.status = st;
    if (!a.lease.empty())
      it.lease_id = a.lease;
    it.error = a.error;
    req.items.push_back(std::move(it));
  }
  auto r = ctx.conn().ack(req);
  if (!r)
    return fail(ctx, r.err());
  return print_ack(ctx, *r, a.transaction_ids, a.status);
}

struct tail_args {
  pop_args pop = [] {
    pop_args p;
    p.batch = 100;
    return p;
  }();
  std::size_t count = 0; ///< stop after this many (0: until Ctrl-C)
};

/// Follows a queue as a group: pop (a long poll of a second, so that
/// Ctrl-C is seen soon), print, ack what was printed; Ctrl-C ends after
/// the batch in hand is printed and acked.
int run_tail(context& ctx, tail_args a) {
  a.pop.wait = true;
  a.pop.timeout = "1s";
  std::string why;
  auto p = pop_request_of(a.pop, why);
  if (!p)
    return usage_error(why);
  // The first Ctrl-C ends after the batch in hand; a second one kills.
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sa.sa_flags = SA_RESETHAND;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  auto& c = ctx.conn();
  std::size_t seen = 0;
  bool ack_failed = false;
  while (!interrupted && (a.count == 0 || seen < a.count)) {
    if (a.count)
      p->batch = std::min(p->batch, a.count - seen);
    auto r = c.pop(*p);
    if (!r) {
      if (interrupted)
        break;
      // A server never reached is a mistake (the address, the port), not a
      // restart: it ends tail as it ends any command.
      if (r.err().code != errc::unavailable || ctx.never_connected())
        return fail(ctx, r.err());
      // A server away, busy or restarting: the client reconnects; wait a
      // little (watching for Ctrl-C) rather than asking again at once.
      for (int i = 0; i < 10 && !interrupted; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
      continue;
    }
    for (auto& m : r->messages) {
      if (ctx.as_json)
        std::cout << message_json(m).dump(-1, ' ', false,
                                          json::error_handler_t::replace)
                  << "\n";
      else
        std::cout << m.partition << "@" << m.offset << " "
                  << payload_text(m, 1 << 20) << "\n";
    }
    std::cout.flush();
    seen += r->messages.size();
    if (!r->messages.empty() && !p->auto_ack) {
      auto req = c.ack_request_for(*r);
      auto acked = c.ack(req);
      if (!acked)
        return fail(ctx, acked.err());
      auto partition_of = [&](const std::string& id) -> std::string {
        for (auto& m : r->messages)
          if (m.partition_id == id)
            return m.partition;
        return id;
      };
      auto n = std::min(acked->items.size(), req.items.size());
      for (std::size_t i = 0; i < n; ++i)
        if (!acked->items[i].success) { // they will be delivered again
          ack_failed = true;
          auto& it = req.items[i];
          auto where = partition_of(it.partition_id);
          auto what = it.up_to ? "partition " + where + " up to offset "
                                     + std::to_string(*it.up_to)
                               : it.transaction_id.value_or("")
                                     + " in partition " + where;
          std::fprintf(stderr, "ack of %s failed: %s\n", what.c_str(),
                       acked->items[i].error.c_str());
        }
    }
  }
  return ack_failed ? partial : ok;
}

struct browse_args {
  std::string queue;
  std::string partition = node::default_partition;
  std::int64_t from = 0;
  std::size_t limit = 20;
};

int run_browse(context& ctx, const browse_args& a) {
  node::browse_request req;
  req.queue = a.queue;
  req.partition = a.partition;
  req.from = a.from;
  req.limit = a.limit;
  auto r = ctx.conn().browse(req);
  if (!r)
    return fail(ctx, r.err());
  if (ctx.as_json) {
    json msgs = json::array();
    for (auto& m : r->messages)
      msgs.push_back(message_json(m));
    print_json({{"messages", msgs}, {"next", r->next}});
    return ok;
  }
  table t{{"OFFSET", "CREATED", "TRANSACTION ID", "PAYLOAD"}};
  for (auto& m : r->messages)
    t.add({std::to_string(m.offset), time_text(m.created_at), m.transaction_id,
           payload_text(m)});
  t.print();
  std::printf("next offset: %lld\n", static_cast<long long>(r->next));
  return ok;
}

void add_pop_options(CLI::App* cmd, pop_args& a) {
  cmd->add_option("queue", a.queue, "the queue")->required();
  cmd->add_option("-p,--partition", a.partition,
                  "one partition (default: any)");
  cmd->add_option("-g,--group", a.group,
                  "consumer group (default: queue mode)");
  cmd->add_option("--mode", a.mode,
                  "where a new group starts: all | new (the server's "
                  "default: all)");
  cmd->add_option("--from", a.from,
                  "where a new group starts: now, or an RFC 3339 time");
}

} // namespace

void add_message_commands(CLI::App& app, context& ctx, int& rc) {
  auto push = std::make_shared<push_args>();
  auto* p = app.add_subcommand(
      "push", "Push messages: JSON payloads as arguments, or NDJSON on stdin");
  p->add_option("queue", push->queue, "the queue")->required();
  p->add_option("payload", push->payloads,
                "payloads (JSON, or see --text/--binary); none: stdin lines");
  p->add_option("-p,--partition", push->partition, "partition (Default)");
  p->add_option("--transaction-id", push->transaction_id,
                "the message's transactionId (deduplicated)");
  p->add_option("--trace-id", push->trace_id, "a trace id");
  p->add_option("-H,--header", push->headers, "a header, key=value");
  auto* text
      = p->add_flag("--text", push->text, "payloads are text (JSON strings)");
  p->add_flag("--binary", push->binary, "payloads are bytes (bin)")
      ->excludes(text);
  p->add_flag("--envelope", push->envelope,
              "stdin lines are {payload, partition, transactionId, headers, "
              "traceId}");
  p->add_option("--batch", push->batch, "messages per request (stdin)")
      ->check(CLI::Range(1, 100'000));
  p->add_flag("--progress", push->progress,
              "a progress line on stderr (default: on a terminal)");
  p->callback([&ctx, &rc, push] { rc = run_push(ctx, *push); });

  auto pop = std::make_shared<pop_args>();
  auto* q = app.add_subcommand("pop", "Pop messages (they stay leased)");
  add_pop_options(q, *pop);
  q->add_option("-n,--batch", pop->batch,
                "messages at most (1..the server's pop-max-batch, 10,000 by "
                "default; its ceiling is 1,000,000)")
      ->check(CLI::Range(1, 1'000'000));
  q->add_flag("-w,--wait", pop->wait, "wait for messages (long poll)");
  q->add_option("--timeout", pop->timeout, "how long to wait (30s)");
  q->add_flag("--auto-ack", pop->auto_ack, "acknowledge on delivery");
  q->callback([&ctx, &rc, pop] { rc = run_pop(ctx, *pop); });

  auto ack = std::make_shared<ack_args>();
  auto* k = app.add_subcommand("ack", "Acknowledge messages of one partition");
  k->add_option("partition-id", ack->partition_id, "the partition's id")
      ->required();
  k->add_option("transaction-id", ack->transaction_ids, "the messages")
      ->required();
  k->add_option("-g,--group", ack->group, "consumer group (queue mode)");
  k->add_option("--lease", ack->lease, "the lease id they were popped with");
  k->add_option("--status", ack->status,
                "completed | failed | dlq | retry (completed)");
  k->add_option("--error", ack->error, "why (failed, dlq)");
  k->callback([&ctx, &rc, ack] { rc = run_ack(ctx, *ack); });

  auto tail = std::make_shared<tail_args>();
  auto* t = app.add_subcommand(
      "tail", "Follow a queue as a group: print each message, then ack it");
  add_pop_options(t, tail->pop);
  t->add_option("-n,--batch", tail->pop.batch, "messages per pop (100)");
  t->add_option("--count", tail->count, "stop after this many messages");
  t->callback([&ctx, &rc, tail] { rc = run_tail(ctx, *tail); });

  auto browse = std::make_shared<browse_args>();
  auto* b
      = app.add_subcommand("browse", "Read a partition's messages (no lease)");
  b->add_option("queue", browse->queue, "the queue")->required();
  b->add_option("-p,--partition", browse->partition, "partition (Default)");
  b->add_option("--from", browse->from, "first offset (0)");
  b->add_option("-n,--limit", browse->limit, "messages at most (20)")
      ->check(CLI::Range(1, 10'000));
  b->callback([&ctx, &rc, browse] { rc = run_browse(ctx, *browse); });
}

} // namespace spool::cli
