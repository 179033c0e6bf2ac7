#include "core/push/push_items.hpp"

#include "core/limits/names.hpp"
#include "storage/segment.hpp"

namespace spool::core {

expected<void> check_item_partition(std::size_t i, std::string_view partition) {
  if (auto ok = check_name(name_kind::partition, partition); !ok)
    return make_error(errc::invalid_argument, "items[", i, "].",
                      ok.err().message);
  return {};
}

api_error item_frame_error(std::size_t i, const storage::error& refused) {
  return make_error(storage::to_api(refused).code, "items[", i,
                    "]: ", refused.message);
}

expected<void> check_push_item(std::size_t i, const std::string* queue,
                               std::string_view partition,
                               const storage::frame& f,
                               const storage::frame_limits& limits) {
  if (queue)
    if (auto ok = check_name(name_kind::queue, *queue); !ok)
      return make_error(errc::invalid_argument, "items[", i, "].",
                        ok.err().message);
  SPOOL_TRY(check_item_partition(i, partition));
  SPOOL_TRY(check_item_frame(i, f, limits));
  if (auto ok = check_frame_texts(f); !ok)
    return make_error(ok.err().code, "items[", i, "].", ok.err().message);
  return {};
}

} // namespace spool::core
