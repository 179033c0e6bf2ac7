#pragma once

/// Queue ids to names, for the scoped gateway (protocol/api/scoped.hpp):
/// a partition uuid and a lease id name their queue by id only.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/gateway.hpp"

namespace spool::api {

/// Queue ids → names, learned from the answers that pass and from the
/// node's listing: a partition uuid and a lease id carry their queue's id
/// (vocab/slot.hpp), and ids are never reused (the store keeps its
/// counters), so what is learned stays true. Thread-safe; held by a
/// `shared_ptr` (a listing in flight holds it).
class queue_directory : public std::enable_shared_from_this<queue_directory> {
public:
  /// The name of queue id `id`, when known.
  std::optional<std::string> name_of(std::uint64_t id) const;
  void learn(std::uint64_t id, const std::string& name);
  /// Learns the queue a partition uuid or lease id carries.
  void learn_id(std::string_view id, const std::string& name);
  /// Calls `then` once every id in `ids` is known, or the node's listing
  /// was read after the call (its failure: `then` gets the error). One
  /// listing runs at a time; the calls that came while it ran wait for
  /// the next. A made-up id costs a listing, as a queue listing by any
  /// token does.
  void resolve(gateway& gw, const std::vector<std::uint64_t>& ids,
               std::function<void(std::optional<api_error>)> then);

private:
  bool all_known(const std::vector<std::uint64_t>& ids) const;
  void list(gateway& gw);
  void refreshed(gateway& gw,
                 const expected<std::vector<node::queue_info>>& qs);

  mutable std::mutex m_;
  std::unordered_map<std::uint64_t, std::string> names_;
  bool refreshing_ = false;
  std::vector<std::function<void(std::optional<api_error>)>> waiting_;
  std::vector<std::function<void(std::optional<api_error>)>> next_;
};

} // namespace spool::api
