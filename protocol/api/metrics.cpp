#include "protocol/api/metrics.hpp"

#include <cstdio>

namespace spool::api {

metrics::metrics(std::vector<std::string> routes) {
  for (auto& r : routes) {
    routes_.push_back(std::make_unique<route_stats>());
    routes_.back()->label = std::move(r);
  }
  unmatched_.label = "unmatched";
}

void metrics::record(std::size_t route, int status,
                     std::chrono::microseconds d) {
  auto& s = route < routes_.size() ? *routes_[route] : unmatched_;
  double secs = static_cast<double>(d.count()) / 1e6;
  std::size_t i = 0;
  while (i < buckets.size() && secs > buckets[i])
    ++i;
  s.counts[i].fetch_add(1, std::memory_order_relaxed);
  s.sum_us.fetch_add(static_cast<std::uint64_t>(d.count()),
                     std::memory_order_relaxed);
  if (status >= 400)
    s.errors.fetch_add(1, std::memory_order_relaxed);
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
  counter("spool_messages_acked_total",
          "Messages acks completed or dead-lettered (each once).", settled);
  counter("spool_ack_failures_total", "Ack items that failed.", ack_failed);
  counter("spool_seeks_total", "Seeks answered 200.", seeks);
  prom::help(out, "spool_http_request_duration_seconds", "histogram",
             "HTTP request latency by route.");
  std::vector<const route_stats*> all;
  for (auto& r : routes_)
    all.push_back(r.get());
  all.push_back(&unmatched_);
  char num[32];
  for (auto* r : all) {
    std::uint64_t cum = 0;
    auto lbl = prom::label(r->label);
    for (std::size_t i = 0; i <= buckets.size(); ++i) {
      cum += r->counts[i].load();
      out += "spool_http_request_duration_seconds_bucket{route=\"" + lbl
             + "\",le=\"";
      if (i < buckets.size()) {
        std::snprintf(num, sizeof num, "%g", buckets[i]);
        out += num;
      } else {
        out += "+Inf";
      }
      out += "\"} " + std::to_string(cum) + "\n";
    }
    std::snprintf(num, sizeof num, "%.6f",
                  static_cast<double>(r->sum_us.load()) / 1e6);
    out += "spool_http_request_duration_seconds_sum{route=\"" + lbl + "\"} "
           + num + "\n";
    out += "spool_http_request_duration_seconds_count{route=\"" + lbl + "\"} "
           + std::to_string(cum) + "\n";
  }
  prom::help(out, "spool_http_request_errors_total", "counter",
             "HTTP answers with a 4xx or 5xx status by route.");
  for (auto* r : all)
    out += "spool_http_request_errors_total{route=\"" + prom::label(r->label)
           + "\"} " + std::to_string(r->errors.load()) + "\n";
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

void count_ack(metrics* m, const node::ack_reply& r) {
  if (m == nullptr)
    return;
  std::uint64_t ok = 0;
  std::uint64_t settled = 0;
  for (auto& it : r.items) {
    ok += it.success ? 1 : 0;
    settled += it.settled;
  }
  m->acked.fetch_add(ok, std::memory_order_relaxed);
  m->ack_failed.fetch_add(r.items.size() - ok, std::memory_order_relaxed);
  m->settled.fetch_add(settled, std::memory_order_relaxed);
}

} // namespace spool::api
