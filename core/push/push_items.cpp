#include "core/push/push_items.hpp"

#include "core/limits/names.hpp"
#include "storage/segment.hpp"

namespace spool::core {

expected<void> check_push_item(std::size_t i, const std::string* queue,
                               std::string_view partition,
                               const storage::frame& f,
                               const storage::frame_limits& limits) {
  if (queue)
    if (auto ok = check_name(name_kind::queue, *queue); !ok)
      return make_error(errc::invalid_argument, "items[", i, "].",
                        ok.err().message);
  if (auto ok = check_name(name_kind::partition, partition); !ok)
    return make_error(errc::invalid_argument, "items[", i, "].",
                      ok.err().message);
  if (auto ok = storage::check_frame(f, limits); !ok)
    return make_error(storage::to_api(ok.err()).code, "items[", i,
                      "]: ", ok.err().message);
  if (auto ok = check_frame_texts(f); !ok)
    return make_error(ok.err().code, "items[", i, "].", ok.err().message);
  return {};
}

} // namespace spool::core
