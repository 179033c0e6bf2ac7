#include "protocol/api/metrics.hpp"

#include <cstdio>

namespace spool::api {

metrics::family::family(std::vector<std::string> labels, std::string other_) {
  for (auto& l : labels) {
    kinds.push_back(std::make_unique<kind_stats>());
    kinds.back()->label = std::move(l);
  }
  other.label = std::move(other_);
}

void metrics::family::record(std::size_t i, bool failed,
                             std::chrono::microseconds d) {
  auto& s = i < kinds.size() ? *kinds[i] : other;
  double secs = static_cast<double>(d.count()) / 1e6;
  std::size_t b = 0;
  while (b < buckets.size() && secs > buckets[b])
    ++b;
  s.counts[b].fetch_add(1, std::memory_order_relaxed);
  s.sum_us.fetch_add(static_cast<std::uint64_t>(d.count()),
                     std::memory_order_relaxed);
  if (failed)
    s.errors.fetch_add(1, std::memory_order_relaxed);
}

metrics::metrics(std::vector<std::string> routes,
                 std::vector<std::string> ops) :
    routes_(std::move(routes), "unmatched"), ops_(std::move(ops), "unknown") {
}

void metrics::record(std::size_t route, int status,
                     std::chrono::microseconds d) {
  routes_.record(route, status >= 400, d);
}

void metrics::record_op(std::size_t op, bool failed,
                        std::chrono::microseconds d) {
  ops_.record(op, failed, d);
}

namespace prom {

std::string label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void help(std::string& out, std::string_view name, std::string_view type,
          std::string_view text) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += text;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

} // namespace prom

void metrics::render(std::string& out) const {
  auto counter = [&](const char* name, const char* text,
                     const std::atomic<std::uint64_t>& v) {
    prom::help(out, name, "counter", text);
    out += name;
    out += ' ';
    out += std::to_string(v.load());
    out += '\n';
  };
  counter("spool_messages_pushed_total", "Messages stored by pushes.", pushed);
  counter("spool_push_duplicates_total", "Push items deduplicated.",
          duplicates);
  counter("spool_messages_popped_total", "Messages delivered by pops.", popped);
  counter("spool_acks_total", "Ack items that succeeded.", acked);
  counter("spool_ack_failures_total", "Ack items that failed.", ack_failed);
  counter("spool_seeks_total", "Seeks answered (a dry run is not counted).",
          seeks);
  routes_.render(out, "spool_http_request", "route",
                 "HTTP request latency by route.",
                 "HTTP answers with a 4xx or 5xx status by route.");
  ops_.render(out, "spool_msgpack_request", "op",
              "msgpack request latency by op.",
              "msgpack error answers (ok: false) by op.");
}

void metrics::family::render(std::string& out, const std::string& name,
                             const char* key, const char* what,
                             const char* errors) const {
  std::vector<const kind_stats*> all;
  for (auto& k : kinds)
    all.push_back(k.get());
  all.push_back(&other);
  auto series = [&](const char* suffix, const std::string& lbl) {
    out += name;
    out += suffix;
    out += '{';
    out += key;
    out += "=\"";
    out += lbl;
    out += '"';
  };
  prom::help(out, name + "_duration_seconds", "histogram", what);
  char num[32];
  for (auto* k : all) {
    std::uint64_t cum = 0;
    auto lbl = prom::label(k->label);
    for (std::size_t i = 0; i <= buckets.size(); ++i) {
      cum += k->counts[i].load();
      series("_duration_seconds_bucket", lbl);
      out += ",le=\"";
      if (i < buckets.size()) {
        std::snprintf(num, sizeof num, "%g", buckets[i]);
        out += num;
      } else {
        out += "+Inf";
      }
      out += "\"} " + std::to_string(cum) + "\n";
    }
    std::snprintf(num, sizeof num, "%.6f",
                  static_cast<double>(k->sum_us.load()) / 1e6);
    series("_duration_seconds_sum", lbl);
    out += std::string{"} "} + num + "\n";
    series("_duration_seconds_count", lbl);
    out += "} " + std::to_string(cum) + "\n";
  }
  prom::help(out, name + "_errors_total", "counter", errors);
  for (auto* k : all) {
    series("_errors_total", prom::label(k->label));
    out += "} " + std::to_string(k->errors.load()) + "\n";
  }
}

void count_push(metrics* m, const node::push_reply& r) {
  if (m)
    for (auto& it : r.items)
      (it.status == node::push_status::queued ? m->pushed : m->duplicates)
          .fetch_add(1, std::memory_order_relaxed);
}

void count_pop(metrics* m, const node::pop_reply& r) {
  if (m)
    m->popped.fetch_add(r.messages.size(), std::memory_order_relaxed);
}

void count_seek(metrics* m, bool dry_run) {
  if (m && !dry_run)
    m->seeks.fetch_add(1, std::memory_order_relaxed);
}

void count_ack(metrics* m, const node::ack_reply& r) {
  if (m == nullptr)
    return;
  std::uint64_t ok = 0;
  for (auto& it : r.items)
    ok += it.success ? 1 : 0;
  m->acked.fetch_add(ok, std::memory_order_relaxed);
  m->ack_failed.fetch_add(r.items.size() - ok, std::memory_order_relaxed);
}

} // namespace spool::api
