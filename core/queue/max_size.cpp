#include "core/queue/max_size.hpp"

#include "vocab/expected.hpp"

namespace spool::core {

room_check check_room(std::int64_t max_size, std::int64_t retained,
                      std::int64_t incoming) {
  if (incoming > max_size)
    return {room_check::outcome::full, 0};
  if (retained + incoming <= max_size)
    return {room_check::outcome::fits, 0};
  return {room_check::outcome::trim, retained + incoming - max_size};
}

std::optional<api_error> after_trims(const std::string& queue,
                                     std::int64_t max_size,
                                     std::int64_t retained,
                                     std::int64_t incoming,
                                     std::span<const trim_share> shares) {
  auto left = retained;
  const api_error* failure = nullptr;
  for (auto& s : shares) {
    left -= s.freed;
    if (!failure && s.failure)
      failure = &*s.failure;
  }
  if (left + incoming <= max_size)
    return std::nullopt;
  if (!failure)
    return queue_full(queue);
  // The same error (a `not_leader` keeps where its leader is), said of
  // the queue.
  auto e = *failure;
  e.message = "Queue " + queue + ": making room failed: " + e.message;
  return e;
}

api_error queue_full(const std::string& queue) {
  return make_error(errc::queue_full, "Queue ", queue, " is full");
}

} // namespace spool::core
