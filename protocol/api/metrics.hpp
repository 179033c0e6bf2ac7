#pragma once

/// What the doors count, and the Prometheus text format the HTTP door
/// serves at `/metrics/prometheus` (docs/http.md lists every series).
/// Counters and histograms are atomics updated on the io threads; the per
/// queue, partition and group gauges are read from the node at each scrape.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "node/api.hpp"

namespace spool::api {

class metrics {
public:
  /// Upper bounds of the latency buckets, in seconds.
  static constexpr std::array<double, 15> buckets
      = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
         0.25,   0.5,   1,      2.5,   5,    10,    30};

  /// `routes`: the label of each HTTP route (its pattern), by route
  /// index; `ops`: the msgpack door's op names, by op index.
  explicit metrics(std::vector<std::string> routes,
                   std::vector<std::string> ops = {});

  /// A request of route `route` (an index; `unmatched` for none) answered
  /// with `status` after `d`.
  void record(std::size_t route, int status, std::chrono::microseconds d);
  /// A msgpack request of op `op` (an index; `unmatched`: an unknown op)
  /// answered after `d`, with an error answer when `failed`.
  void record_op(std::size_t op, bool failed, std::chrono::microseconds d);
  static constexpr std::size_t unmatched = static_cast<std::size_t>(-1);

  std::atomic<std::uint64_t> pushed{0};     ///< messages stored by pushes
  std::atomic<std::uint64_t> duplicates{0}; ///< push items deduplicated
  std::atomic<std::uint64_t> popped{0};     ///< messages delivered by pops
  std::atomic<std::uint64_t> acked{0};      ///< ack items that succeeded
  std::atomic<std::uint64_t> ack_failed{0}; ///< ack items that did not
  std::atomic<std::uint64_t> seeks{0};      ///< seeks answered 200

  /// The counters and histograms as Prometheus text.
  void render(std::string& out) const;

private:
  /// One request kind's latency histogram and error count.
  struct kind_stats {
    std::string label;
    std::array<std::atomic<std::uint64_t>, buckets.size() + 1> counts{};
    std::atomic<std::uint64_t> sum_us{0};
    std::atomic<std::uint64_t> errors{0};
  };
  /// A door's request kinds (routes, ops), plus one for requests of none.
  struct family {
    family(std::vector<std::string> labels, std::string other);
    void record(std::size_t i, bool failed, std::chrono::microseconds d);
    /// `<name>_duration_seconds{<key>=…}` and `<name>_errors_total{…}`.
    void render(std::string& out, const std::string& name, const char* key,
                const char* what, const char* errors) const;
    std::vector<std::unique_ptr<kind_stats>> kinds;
    kind_stats other;
  };
  family routes_;
  family ops_;
};

/// The message counters both doors keep (none: not kept).
void count_push(metrics* m, const node::push_reply& r);
void count_pop(metrics* m, const node::pop_reply& r);
/// A seek answered (a dry run is not counted).
void count_seek(metrics* m, bool dry_run);
void count_ack(metrics* m, const node::ack_reply& r);

/// Prometheus text helpers.
namespace prom {
/// `"` `\` and newlines escaped as the exposition format asks.
std::string label(std::string_view v);
void help(std::string& out, std::string_view name, std::string_view type,
          std::string_view text);
} // namespace prom

} // namespace spool::api
